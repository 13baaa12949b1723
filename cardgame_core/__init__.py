"""Code shared by the Madiao and Mao environments: JIT configuration, bit kernels, AEC scaffolding."""
