"""The heaviest minipy workload: nested loops computing a checksum with mixed arithmetic."""


def mix(h, v):
    h = (h ^ v) * 1099511628211
    return h & 0xFFFFFFFFFFFF


def main():
    h = 1469598103
    total = 0
    for i in range(2000):
        j = 0
        while j < 3000:
            k = i * j + 7
            if k % 3 == 0:
                total += k // 3
            elif k % 5 == 1:
                total -= k >> 2
            else:
                total += (k << 1) ^ i
            if j % 50 == 0:
                h = mix(h, total & 0xFFFFFFFF)
            j += 1
        if i % 500 == 499:
            print(i, total, h)
    print(mix(h, total & 0xFFFF))


main()
