// Level-synchronous BFS over byte flags: the CUDA C++ twin of bench/kernels/bfs.pg (Rodinia's two
// kernels per level over a CSR graph; block 256, one thread per vertex).
extern "C" __global__ void __launch_bounds__(256) bfs_expand(const unsigned* row_start, const unsigned* adj,
                                                             unsigned char* frontier, unsigned char* updating,
                                                             const unsigned char* visited, int* cost, unsigned n) {
  const unsigned v = blockIdx.x * 256 + threadIdx.x;
  if (v < n && frontier[v]) {
    frontier[v] = 0;
    const int next = cost[v] + 1;
    for (unsigned e = row_start[v]; e < row_start[v + 1]; ++e) {
      const unsigned u = adj[e];
      if (!visited[u]) {
        cost[u] = next;
        updating[u] = 1;
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) bfs_mark(unsigned char* frontier, unsigned char* updating,
                                                           unsigned char* visited, unsigned* more, unsigned n) {
  const unsigned v = blockIdx.x * 256 + threadIdx.x;
  if (v < n && updating[v]) {
    frontier[v] = 1;
    visited[v] = 1;
    *more = 1;
    updating[v] = 0;
  }
}
