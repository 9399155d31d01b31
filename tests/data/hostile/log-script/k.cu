#error <!--<script> </script><script>window.pwned = 'log'</script><img src=x onerror="window.pwned = 'img'">
extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }
