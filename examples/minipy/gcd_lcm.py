"""gcd/lcm: functions calling functions, range with a negative step, chains, and/or."""


def gcd(a, b):
    while b != 0:
        t = a % b
        a = b
        b = t
    return a


def lcm(a, b):
    if a == 0 or b == 0:
        return 0
    return a // gcd(a, b) * b


def lcm_upto(n):
    result = 1
    for k in range(n, 0, -1):
        result = lcm(result, k)
    return result


def coprime(a, b):
    return gcd(a, b) == 1


def describe(a, b):
    g = gcd(a, b)
    # a chained comparison and Python's value-returning `or`
    band = 1 if 1 < g <= 10 else 2 if 10 < g < 100 else 3
    return g * 10 + (band or 9)


for n in range(20, 0, -4):
    print(n, lcm_upto(n))

count = 0
for a in range(1, 60):
    for b in range(a, 60, 7):
        if coprime(a, b) and not (a == 1 or b == 1):
            count += 1
print(count)

for a in range(100, 10, -17):
    b = 3 * a - 1 if a % 2 else a + 24
    print(a, b, gcd(a, b), lcm(a, b), describe(a, b), 1 if a < b < 300 else 0, (a > 50) and b or -1)
print(gcd(0, 5), lcm(0, 5), gcd(-12, 18))
