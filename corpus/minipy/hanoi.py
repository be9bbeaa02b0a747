"""Towers of Hanoi: moves counted and a checksum of the moves, by recursion."""


def hanoi(n, a, b, c, h):
    if n == 0:
        return h
    h = hanoi(n - 1, a, c, b, h)
    h = (h * 7 + a * 3 + c) % 1000000007
    return hanoi(n - 1, b, a, c, h)


for n in range(1, 21):
    print(n, hanoi(n, 1, 2, 3, 0))
