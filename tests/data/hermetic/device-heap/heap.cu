// The hog takes every MiB the heap has and frees none of it.
extern "C" __global__ void hog(float *ok) {
    int taken = 0;
    while (malloc(1 << 20) != nullptr) ++taken;
    *ok = taken > 0 ? 1.0f : 0.0f;
}

// The cell after it asks for 4 MiB, as any kernel of a fresh context may.
extern "C" __global__ void after(float *ok) {
    void *p = malloc(4 << 20);
    *ok = p != nullptr ? 1.0f : 0.0f;
    free(p);
}
