"""Powers of a 3x3 matrix modulo a prime by repeated squaring (27 products a
multiplication, every entry a local), and linear recurrences read off them."""


def trace_power(e, p):
    # the companion matrix of x**3 = x**2 + 2x + 3
    a, b, c = 1, 2, 3
    d, f, g = 1, 0, 0
    h, i, j = 0, 1, 0
    ra, rb, rc, rd, rf, rg, rh, ri, rj = 1, 0, 0, 0, 1, 0, 0, 0, 1
    while e > 0:
        if e & 1:
            ra, rb, rc, rd, rf, rg, rh, ri, rj = (
                (ra * a + rb * d + rc * h) % p, (ra * b + rb * f + rc * i) % p,
                (ra * c + rb * g + rc * j) % p, (rd * a + rf * d + rg * h) % p,
                (rd * b + rf * f + rg * i) % p, (rd * c + rf * g + rg * j) % p,
                (rh * a + ri * d + rj * h) % p, (rh * b + ri * f + rj * i) % p,
                (rh * c + ri * g + rj * j) % p)
        a, b, c, d, f, g, h, i, j = (
            (a * a + b * d + c * h) % p, (a * b + b * f + c * i) % p,
            (a * c + b * g + c * j) % p, (d * a + f * d + g * h) % p,
            (d * b + f * f + g * i) % p, (d * c + f * g + g * j) % p,
            (h * a + i * d + j * h) % p, (h * b + i * f + j * i) % p,
            (h * c + i * g + j * j) % p)
        e >>= 1
    return (ra + rf + rj) % p


total = 0
for e in range(1, 6000):
    total = (total + trace_power(e * 7919, 1000000007)) % 1000000007
    if e % 1000 == 0:
        print(e, total)
