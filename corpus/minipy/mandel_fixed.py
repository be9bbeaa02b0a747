"""The Mandelbrot set in ASCII with 16.16 fixed point integers."""

def rounds(cr, ci, limit):
    x = 0
    y = 0
    n = 0
    while n < limit:
        xx = (x * x) >> 16
        yy = (y * y) >> 16
        if xx + yy > 262144:
            return n
        y = ((x * y) >> 15) + ci
        x = xx - yy + cr
        n += 1
    return limit


def main():
    chars = 10
    rows = 48
    cols = 100
    total = 0
    for row in range(rows):
        ci = -78000 + row * 3250
        line = 0
        for col in range(cols):
            cr = -140000 + col * 1800
            n = rounds(cr, ci, 1500)
            total += n
            line = (line * 31 + n) % 1000000007
        print(row, line)
    print(total)


main()
