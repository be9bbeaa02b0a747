"""A xorshift random generator filling sixteen nibbles of an int, sorted by
an insertion sort on the packed nibbles, many times over; checksums printed."""


def rand(s):
    s ^= (s << 13) & 0xFFFFFFFFFFFF
    s ^= s >> 7
    s ^= (s << 17) & 0xFFFFFFFFFFFF
    return s & 0xFFFFFFFFFFFF


def nibble(p, i):
    return (p >> (4 * i)) & 15


def setn(p, i, v):
    return (p & ~(15 << (4 * i))) | (v << (4 * i))


def sort16(p):
    i = 1
    while i < 15:
        v = nibble(p, i)
        j = i - 1
        while j >= 0 and nibble(p, j) > v:
            p = setn(p, j + 1, nibble(p, j))
            j -= 1
        p = setn(p, j + 1, v)
        i += 1
    return p


seed = 88172645463325252 & 0xFFFFFFFFFFFF
check = 0
for round_ in range(12000):
    seed = rand(seed)
    p = seed & 0xFFFFFFFFFFFFFFF
    q = sort16(p)
    check = (check * 131 + (q & 0xFFFFFFF)) % 1000000007
    if round_ % 3000 == 0:
        print(round_, q)
print(check)
