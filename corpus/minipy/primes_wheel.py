"""Primes below a bound by trial division with a 2-3 wheel; counts and sums per block."""


def is_prime(n):
    if n < 4:
        return n >= 2
    if n % 2 == 0 or n % 3 == 0:
        return 0
    d = 5
    while d * d <= n:
        if n % d == 0 or n % (d + 2) == 0:
            return 0
        d += 6
    return 1


block = 0
count = 0
total = 0
n = 0
while n < 600000:
    if is_prime(n):
        count += 1
        total += n
    n += 1
    if n % 100000 == 0:
        print(n, count, total)
