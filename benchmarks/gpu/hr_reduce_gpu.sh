#!/usr/bin/env bash
# hr-reduce's GPU build on this machine: S-Caffe's reduce on device buffers (cudaMalloc, a
# CUDA-aware MPI, the additions on the GPU), or where the MPI is not CUDA-aware the managed-memory
# fallback, said so. Builds workloads/hr-reduce with -DHR_REDUCE_CUDA=ON into a temporary folder,
# runs MPI_Reduce, Bin, CC and the two-level designs on HR_RANKS ranks (default 4) at 8-64 MiB,
# checks that every run verified its sums, and prints `name: value` lines (latencies in us, the
# CC/Bin time ratio at 64 MiB: below 1, the chain is faster).
#
# Needs CMake, nvcc ($CUDACXX, PATH or /usr/local/cuda/bin) and an MPI ($MPICC and $MPIRUN, else
# mpicc and mpirun on PATH). Without a GPU it prints one line and exits 0 (a skip); a failed
# build, run or check exits 1.
set -euo pipefail

if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "hr_reduce_gpu: skipped: no GPU here (nvidia-smi -L fails)"
    exit 0
fi

fail() { echo "hr_reduce_gpu: FAILED: $*" >&2; exit 1; }

source_dir=$(cd "$(dirname "$0")/../../workloads/hr-reduce" && pwd)
ranks=${HR_RANKS:-4}
mpicc=${MPICC:-$(command -v mpicc || true)}
mpirun=${MPIRUN:-$(command -v mpirun || true)}
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$mpicc" ] && [ -x "$mpirun" ] || fail "no MPI: set MPICC and MPIRUN or put mpicc and mpirun on PATH"
[ -x "$nvcc" ] || fail "no nvcc: set CUDACXX or put the CUDA toolkit's nvcc on PATH"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake -S "$source_dir" -B "$work/build" -DMPI_C_COMPILER="$mpicc" -DCMAKE_BUILD_TYPE=Release \
    -DHR_REDUCE_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" >"$work/build.log" 2>&1 &&
    cmake --build "$work/build" >>"$work/build.log" 2>&1 ||
    { tail -n 30 "$work/build.log" >&2; fail "building hr-reduce with -DHR_REDUCE_CUDA=ON"; }

launcher=("$mpirun" -np "$ranks")
mpi_version=$("$mpirun" --version 2>&1 || true)
if [[ $mpi_version == *"Open MPI"* || $mpi_version == *OpenRTE* ]]; then  # 4.x says OpenRTE
    launcher=("$mpirun" --oversubscribe --bind-to none -np "$ranks")
    [ "$(id -u)" -ne 0 ] || launcher=("$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np "$ranks")
fi
bench() { "${launcher[@]}" "$work/build/hr_reduce" "$@"; }

# S-Caffe's path when the MPI moves device buffers; its refusal names the MPI and what it lacks
memory=device
if ! bench --gpu-buffers device --sizes 4:4 --iterations 1 --warmup 0 >"$work/probe.out" 2>"$work/probe.err"; then
    grep -q "is not CUDA-aware" "$work/probe.err" || { cat "$work/probe.err" >&2; fail "the device-buffer probe"; }
    memory=managed
    echo "hr_reduce_gpu: the MPI is not CUDA-aware, so the managed-memory fallback runs (additions on the host):" \
        "$(grep -o 'error: .*' "$work/probe.err" | head -n 1)"
fi

mib=$((1 << 20))
half=$((ranks / 2))
declare -A median
for variant in mpi:mpi bin:binomial cc:chain "cb${half}:cb --chain $half" "cc${half}:cc --chain $half"; do
    name=${variant%%:*}
    read -r -a algorithm <<<"${variant#*:}"
    log="$work/$name.out"
    bench --gpu-buffers "$memory" --algorithm "${algorithm[@]}" --sizes $((8 * mib)):$((64 * mib)) \
        --iterations 10 --warmup 2 >"$log" 2>"$work/$name.err" ||
        { tail -n 20 "$work/$name.err" >&2; fail "$name (--algorithm ${algorithm[*]}) exited non-zero"; }
    grep -q "^# Verified:" "$log" || fail "$name: no '# Verified:' line, the sums were not all checked"
    grep -q "^# Buffers: gpu $memory" "$log" || fail "$name: took another path than $memory: $(grep '^# Buffers' "$log")"
    median[$name]=$(awk -v size=$((64 * mib)) '$1 == size {print $5}' "$log")
    [ -n "${median[$name]}" ] || fail "$name: no 64 MiB row"
done

echo "hr_reduce_gpu_path: $memory"
echo "hr_reduce_gpu_buffers: $(sed -n 's/^# Buffers: //p' "$work/mpi.out")"
echo "hr_reduce_gpu_mpi: $(sed -n 's/^# MPI library: //p' "$work/mpi.out" | cut -c1-60)"
echo "hr_reduce_gpu_ranks: $ranks"
for name in mpi bin cc "cb${half}" "cc${half}"; do
    echo "hr_reduce_gpu_${name}_64mb_us: ${median[$name]}"
done
echo "hr_reduce_gpu_verified: 5 of 5 algorithms, 8-64 MiB"
awk -v cc="${median[cc]}" -v bin="${median[bin]}" 'BEGIN {printf "hr_reduce_gpu_cc_bin_64mb: %.2f\n", cc / bin}'
