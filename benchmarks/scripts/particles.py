"""Particles moved by a small 2-D vector class in pure Python (no NumPy): classes, methods and
lists only."""
import math

class Vec:
    def __init__(self, x, y):
        self.x = x
        self.y = y
    def __add__(self, o):
        return Vec(self.x + o.x, self.y + o.y)
    def scale(self, s):
        return Vec(self.x * s, self.y * s)
    def norm(self):
        return math.hypot(self.x, self.y)

def update(ps, vs, dt):
    out = []
    for p, v in zip(ps, vs):
        out.append(p + v.scale(dt))
    return out

ps = [Vec(i * 0.1, i * 0.2) for i in range(50)]
vs = [Vec(1.0, -0.5 * (i % 3)) for i in range(50)]
for t in range(100):
    ps = update(ps, vs, 0.01)
print(round(sum(p.norm() for p in ps), 6))
