"""Recursive Fibonacci: a call-heavy minipy workload."""


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def main():
    for n in range(0, 25, 4):
        print(n, fib(n))
    print(fib(27))


main()
