"""Digit games: digit sums, reversals, palindromes and Lychrel candidates below a bound."""


def reverse(n):
    r = 0
    while n > 0:
        r = r * 10 + n % 10
        n //= 10
    return r


def digit_sum(n):
    s = 0
    while n > 0:
        s += n % 10
        n //= 10
    return s


def lychrel(n):
    i = 0
    while i < 30:
        n = n + reverse(n)
        if n == reverse(n):
            return 0
        if n > 1000000000000000:
            return 1
        i += 1
    return 1


pal = 0
sums = 0
ly = 0
for n in range(1, 150000):
    if n == reverse(n):
        pal += 1
    sums += digit_sum(n * n)
    if n < 12000 and lychrel(n):
        ly += 1
print(pal, sums, ly)
