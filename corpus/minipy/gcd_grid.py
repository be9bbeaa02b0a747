"""Euler's totient by gcd counts over a grid, and coprime pairs (Euclid in a loop)."""


def gcd(a, b):
    while b:
        a, b = b, a % b
    return a


coprime = 0
for a in range(1, 700):
    for b in range(1, 700):
        if gcd(a, b) == 1:
            coprime += 1
print(coprime)
phisum = 0
for n in range(1, 1500):
    k = 0
    for m in range(1, n + 1):
        if gcd(n, m) == 1:
            k += 1
    phisum += k
print(phisum)
