"""Seed 000's algorithmic claims (chapters 01-02): the BPTT schemes and the task's sizes."""

ENTRIES = {
    "000.bptt.quadratic": dict(
        value=2, unit="(exponent of N)", seed="000", where="§3.1, Fig. 5",
        conditions="the WildML double loop: for every output step, walk the error back to step 1",
        quote="**Fig. 5.** $O(N^2)$ approach for implementing BPTT"),
    "000.task.features": dict(
        value=1000, unit="features", seed="000", where="§3.2",
        conditions="CIFAR-10 grayscale images flattened, truncated for performance testing",
        quote="we have decided to truncate the image feature vector to 1000 instead so as to avoid testing "
              "matrix multiplications of powers of 2"),
    "000.task.batch": dict(
        value=1000, unit="samples", seed="000", where="§4 (performance section)",
        conditions="the batch size of every Halide timing unless stated otherwise (n_x = n_h = n_y = 1000, T = 10)",
        quote="For testing our RNN, we used a batch size of 1000"),
    "000.task.angle": dict(
        value=10, unit="degrees", seed="000", where="§3.2, Fig. 4",
        conditions="the image-rotation task: y_t is x_t rotated anti-clockwise",
        quote="train an RNN to rotate an image by 10 degrees anti-clockwise"),
}
