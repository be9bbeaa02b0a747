"""Fannkuch on permutations packed four bits an element into one int: flips
counted by reversing a prefix with shifts and masks, permutations generated
in Heap's order with the counters packed too."""


def get(p, i):
    return (p >> (4 * i)) & 15


def put(p, i, v):
    return (p & ~(15 << (4 * i))) | (v << (4 * i))


def flips(p):
    count = 0
    first = get(p, 0)
    while first != 0:
        i = 0
        j = first
        while i < j:
            a = get(p, i)
            b = get(p, j)
            p = put(put(p, i, b), j, a)
            i += 1
            j -= 1
        count += 1
        first = get(p, 0)
    return count


def fannkuch(n):
    p = 0
    for i in range(n):
        p = put(p, i, i)
    c = 0
    checksum = 0
    most = 0
    sign = 1
    index = 0
    f = flips(p)
    most = f
    checksum = f
    i = 1
    while i < n:
        ci = get(c, i)
        if ci < i:
            if i % 2 == 0:
                a = get(p, 0)
                b = get(p, i)
                p = put(put(p, 0, b), i, a)
            else:
                a = get(p, ci)
                b = get(p, i)
                p = put(put(p, ci, b), i, a)
            index += 1
            sign = -sign
            f = flips(p)
            if f > most:
                most = f
            checksum += sign * f
            c = put(c, i, ci + 1)
            i = 1
        else:
            c = put(c, i, 0)
            i += 1
    print(checksum)
    print(n, most)


fannkuch(9)
