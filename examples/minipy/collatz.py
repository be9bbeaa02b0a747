"""Longest Collatz chain for a start below N (a while loop inside a for loop)."""


def chain_length(n):
    steps = 1
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


N = 45000
best = 0
best_start = 0
total = 0
for start in range(1, N):
    length = chain_length(start)
    total += length
    if length > best:
        best = length
        best_start = start
print(best_start, best)
print(total)
