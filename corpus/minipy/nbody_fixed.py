"""Two planets and a moon around a fixed sun under inverse-square gravity,
integer fixed point, symplectic Euler steps; positions printed as they go."""


def isqrt(n):
    if n <= 0:
        return 0
    x = n
    y = (x + 1) // 2
    while y < x:
        x = y
        y = (x + n // x) // 2
    return x


def accel(d, r2, r, gm):
    # gm * d / r**3 in velocity units (1/256 of a position unit a step)
    return gm * d // (r2 * r // 256 + 1)


gm = 1 << 36
x1, y1, vx1, vy1 = 100000, 0, 0, 212000
x2, y2, vx2, vy2 = -160000, 0, 0, -168000
x3, y3, vx3, vy3 = 0, 70000, -250000, 0
for step in range(40000):
    r2 = x1 * x1 + y1 * y1
    r = isqrt(r2)
    vx1 -= accel(x1, r2, r, gm)
    vy1 -= accel(y1, r2, r, gm)
    r2 = x2 * x2 + y2 * y2
    r = isqrt(r2)
    vx2 -= accel(x2, r2, r, gm)
    vy2 -= accel(y2, r2, r, gm)
    r2 = x3 * x3 + y3 * y3
    r = isqrt(r2)
    vx3 -= accel(x3, r2, r, gm)
    vy3 -= accel(y3, r2, r, gm)
    x1 += vx1 // 256
    y1 += vy1 // 256
    x2 += vx2 // 256
    y2 += vy2 // 256
    x3 += vx3 // 256
    y3 += vy3 // 256
    if step % 4000 == 0:
        print(step, x1, y1, x2, y2, x3, y3)
print(x1, y1, x2, y2, x3, y3)
