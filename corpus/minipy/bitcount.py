"""Population counts three ways (loop, Kernighan, SWAR) over a xorshift stream."""


def pop_loop(x):
    c = 0
    while x:
        c += x & 1
        x >>= 1
    return c


def pop_kernighan(x):
    c = 0
    while x:
        x &= x - 1
        c += 1
    return c


def pop_swar(x):
    x = x - ((x >> 1) & 0x55555555)
    x = (x & 0x33333333) + ((x >> 2) & 0x33333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F
    return ((x * 0x01010101) & 0xFFFFFFFF) >> 24


s = 2463534242
total = 0
bad = 0
for i in range(120000):
    s ^= (s << 13) & 0xFFFFFFFF
    s ^= s >> 17
    s ^= (s << 5) & 0xFFFFFFFF
    a = pop_loop(s)
    b = pop_kernighan(s)
    if a != b or a != pop_swar(s):
        bad += 1
    total += a
print(total, bad)
