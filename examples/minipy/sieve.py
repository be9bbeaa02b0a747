"""Prime counting by trial division (no lists: only int locals, nested while loops)."""


def is_prime(n):
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    d = 3
    while d * d <= n:
        if n % d == 0:
            return False
        d += 2
    return True


def count_primes(limit):
    count = 0
    n = 2
    while n < limit:
        if is_prime(n):
            count += 1
        n += 1
    return count


def main():
    limit = 10
    while limit <= 100000:
        print(limit, count_primes(limit))
        limit *= 10
    # the last few primes below 100000, found with an inline nested while loop
    n = 99999
    found = 0
    while found < 5:
        d = 3
        prime = n % 2 == 1
        while prime and d * d <= n:
            if n % d == 0:
                prime = False
            d += 2
        if prime:
            print(n)
            found += 1
        n -= 1


main()
