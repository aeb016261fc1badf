// Workload: about 60% / 30% / 10% of its CPU time in burn_a, burn_b and
// burn_c, each at the end of a chain main -> run -> stage_X -> burn_X,
// as tests/workloads/shares.c.  Usage: shares-rs [SECONDS] (default 2)
// Each burn has its own constants: rustc merges identical functions.
// An opaque value (std::hint::black_box is not stable in Debian's rustc 1.63).
fn black_box(x: u64) -> u64 {
    unsafe { std::ptr::read_volatile(&x) }
}

#[inline(never)]
fn burn_a(n: u64, mut x: u64) -> u64 {
    for _ in 0..black_box(n) {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    }
    x
}

#[inline(never)]
fn burn_b(n: u64, mut x: u64) -> u64 {
    for _ in 0..black_box(n) {
        x = x.wrapping_mul(2862933555777941757).wrapping_add(3037000493);
    }
    x
}

#[inline(never)]
fn burn_c(n: u64, mut x: u64) -> u64 {
    for _ in 0..black_box(n) {
        x = x.wrapping_mul(3202034522624059733).wrapping_add(4354685564936845319);
    }
    x
}

#[inline(never)]
fn stage_a(n: u64, x: u64) -> u64 { black_box(burn_a(n * 6, x)) + 1 }
#[inline(never)]
fn stage_b(n: u64, x: u64) -> u64 { black_box(burn_b(n * 3, x)) + 1 }
#[inline(never)]
fn stage_c(n: u64, x: u64) -> u64 { black_box(burn_c(n, x)) + 1 }

fn cpu_seconds() -> f64 {
    let mut ts = [0i64; 2];
    // CLOCK_PROCESS_CPUTIME_ID is 2 on Linux.
    extern "C" { fn clock_gettime(clk: i32, ts: *mut i64) -> i32; }
    unsafe { clock_gettime(2, ts.as_mut_ptr()) };
    ts[0] as f64 + ts[1] as f64 / 1e9
}

#[inline(never)]
fn run(seconds: f64) -> u64 {
    let start = cpu_seconds();
    let mut x = 1;
    while cpu_seconds() - start < seconds {
        x = stage_a(200000, x);
        x = stage_b(200000, x);
        x = stage_c(200000, x);
    }
    x
}

fn main() {
    let secs = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2.0);
    std::process::exit((black_box(run(secs)) & 0) as i32);
}
