"""A small class-based model (logistic regression and a two-layer network) trained with
gradient descent; methods call each other, keep state on the instance and print progress."""
import numpy as np


class Layer:
    def __init__(self, n_in, n_out, seed):
        rng = np.random.default_rng(seed)
        self.w = rng.normal(scale=1 / np.sqrt(n_in), size=(n_in, n_out))
        self.b = np.zeros(n_out)

    def forward(self, x):
        self.x = x
        return x @ self.w + self.b

    def backward(self, grad, lr):
        gw = self.x.T @ grad
        gb = grad.sum(axis=0)
        out = grad @ self.w.T
        self.w = self.w - lr * gw
        self.b = self.b - lr * gb
        return out


class Network:
    def __init__(self, sizes, seed=0):
        self.layers = [Layer(a, b, seed + i) for i, (a, b) in enumerate(zip(sizes, sizes[1:]))]
        self.losses = []

    @staticmethod
    def sigmoid(z):
        return 1 / (1 + np.exp(-z))

    def forward(self, x):
        h = x
        for i, layer in enumerate(self.layers):
            h = layer.forward(h)
            if i < len(self.layers) - 1:
                h = np.tanh(h)
        return self.sigmoid(h)

    def loss(self, p, y):
        eps = 1e-9
        return -(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)).mean()

    def step(self, x, y, lr):
        p = self.forward(x)
        loss = self.loss(p, y)
        grad = (p - y) / len(y)              # d loss / d logits of the last layer
        for i in reversed(range(len(self.layers))):
            grad = self.layers[i].backward(grad, lr)
            if i > 0:                        # through the tanh of the layer below
                grad = grad * (1 - np.tanh(self.layers[i - 1].forward(self.layers[i - 1].x)) ** 2)
        self.losses.append(float(loss))
        return loss

    def fit(self, x, y, epochs, lr=0.5):
        for epoch in range(epochs):
            loss = self.step(x, y, lr)
            if epoch % 20 == 0:
                print(f"epoch {epoch:3d} loss {loss:.5f}")
            if loss < 0.05:
                print(f"converged at epoch {epoch}")
                break
        return self

    def accuracy(self, x, y):
        return float(((self.forward(x) > 0.5) == (y > 0.5)).mean())


def main():
    t = np.linspace(-1, 1, 80)
    x = np.stack([t, t ** 2], axis=1)
    y = (x[:, 1] > 0.3).astype(float)[:, None]
    net = Network([2, 8, 1]).fit(x, y, 120)
    print(f"accuracy {net.accuracy(x, y):.3f}, final loss {net.losses[-1]:.5f}")
    return net.losses, [layer.w for layer in net.layers]


if __name__ == "__main__":
    RESULT = main()
