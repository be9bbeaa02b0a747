"""Modular exponentiation by squaring, Fermat tests and a tiny RSA round trip
(products kept below 2**62 by 31-bit moduli)."""


def mulmod(a, b, m):
    return (a * b) % m


def powmod(b, e, m):
    r = 1
    b = b % m
    while e > 0:
        if e & 1:
            r = mulmod(r, b, m)
        b = mulmod(b, b, m)
        e >>= 1
    return r


def gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def inverse(a, m):
    t, newt = 0, 1
    r, newr = m, a
    while newr != 0:
        q = r // newr
        t, newt = newt, t - q * newt
        r, newr = newr, r - q * newr
    if t < 0:
        t += m
    return t


p = 46337
q = 46349
n = p * q
phi = (p - 1) * (q - 1)
e = 65537
d = inverse(e, phi)
print(n, d, gcd(e, phi))
check = 0
for msg in range(2, 9000):
    c = powmod(msg, e, n)
    m = powmod(c, d, n)
    if m != msg:
        print(-1, msg)
    check = (check + c) % 1000003
print(check)
fermat = 0
for k in range(1000001, 1002001, 2):
    if powmod(2, k - 1, k) == 1:
        fermat += 1
print(fermat)
