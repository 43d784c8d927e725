//! Student's t distribution for any positive, possibly fractional, degrees
//! of freedom (Welch's df is rarely an integer): the CDF through the
//! regularized incomplete beta function, the quantile by a bracketed Newton
//! iteration on that CDF. Infinite df is the standard normal, through the
//! incomplete gamma function. No table, so any level works.

use std::f64::consts::PI;

/// Beyond this many degrees of freedom t and the normal differ by less than
/// 1e-9, and the incomplete beta continued fraction would need many terms.
const NORMAL_DF: f64 = 1e9;
const EPS: f64 = 1e-15;
const TINY: f64 = 1e-300;

/// ln Γ(x) for x > 0 (Lanczos, g = 7, nine terms; relative error near 1e-15).
pub(crate) fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection keeps the series in its accurate range.
        (PI / (PI * x).sin()).ln() - ln_gamma(1.0 - x)
    } else {
        let x = x - 1.0;
        let t = x + 7.5;
        let a = C
            .iter()
            .enumerate()
            .skip(1)
            .fold(C[0], |a, (i, c)| a + c / (x + i as f64));
        0.5 * (2.0 * PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
    }
}

fn ln_beta(a: f64, b: f64) -> f64 {
    ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b)
}

/// The continued fraction of the incomplete beta function (modified Lentz).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    // Convergence takes O(√max(a, b)) terms; this cap covers a = 5e8, the
    // normal cut-off (the continuity test there would fail otherwise).
    for m in 1..200_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

/// I_x(a, b) with y = 1 − x passed in, so callers that know 1 − x more
/// precisely than the subtraction would give it (the t tails) keep that;
/// `ln_b` is ln B(a, b), which repeated calls at the same a, b compute once.
fn inc_beta(a: f64, b: f64, x: f64, y: f64, ln_b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if y <= 0.0 {
        return 1.0;
    }
    let front = (a * x.ln() + b * y.ln() - ln_b).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, y) / b
    }
}

/// The regularized incomplete beta function I_x(a, b), for a, b > 0 and
/// 0 ≤ x ≤ 1.
pub fn regularized_incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if !(a > 0.0 && b > 0.0) || x.is_nan() {
        return f64::NAN;
    }
    inc_beta(
        a,
        b,
        x.clamp(0.0, 1.0),
        (1.0 - x).clamp(0.0, 1.0),
        ln_beta(a, b),
    )
}

/// Q(a, x), the upper regularized incomplete gamma function (series below
/// a + 1, continued fraction above).
fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let front = (a * x.ln() - x - ln_gamma(a)).exp();
    if x < a + 1.0 {
        let (mut ap, mut sum, mut del) = (a, 1.0 / a, 1.0 / a);
        for _ in 0..10_000 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * EPS {
                break;
            }
        }
        1.0 - sum * front
    } else {
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / TINY;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            d = 1.0 / if d.abs() < TINY { TINY } else { d };
            c = b + an / c;
            if c.abs() < TINY {
                c = TINY;
            }
            let step = d * c;
            h *= step;
            if (step - 1.0).abs() < EPS {
                break;
            }
        }
        front * h
    }
}

/// P(Z > z) for a standard normal variable (the one normal tail of the
/// crate: Student's t at infinite df and the rank test's approximation).
pub(crate) fn normal_upper_tail(z: f64) -> f64 {
    // erfc(u) = Q(1/2, u²) for u ≥ 0.
    let q = 0.5 * gamma_q(0.5, z * z / 2.0);
    if z >= 0.0 {
        q
    } else {
        1.0 - q
    }
}

/// P(T > t) for Student's t with `df` degrees of freedom; precise far into
/// the upper tail, where 1 − CDF would cancel.
pub fn student_t_upper_tail(t: f64, df: f64) -> f64 {
    if df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    Student::new(df).upper_tail(t)
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom (df = ∞: normal).
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    student_t_upper_tail(-t, df)
}

/// One t distribution, with ln B(df/2, 1/2) (shared by the tail and the
/// density) computed once for the Newton iteration.
struct Student {
    df: f64,
    ln_b: f64,
}

impl Student {
    fn new(df: f64) -> Self {
        Student {
            df,
            ln_b: if df >= NORMAL_DF {
                f64::NAN
            } else {
                ln_beta(df / 2.0, 0.5)
            },
        }
    }

    fn upper_tail(&self, t: f64) -> f64 {
        let df = self.df;
        if t.is_nan() {
            return f64::NAN;
        }
        if t.is_infinite() {
            return if t > 0.0 { 0.0 } else { 1.0 };
        }
        if df >= NORMAL_DF {
            return normal_upper_tail(t);
        }
        let t2 = t * t;
        // P(|T| > |t|) = I_{df/(df+t²)}(df/2, 1/2).
        let two_sided = inc_beta(df / 2.0, 0.5, df / (df + t2), t2 / (df + t2), self.ln_b);
        if t >= 0.0 {
            two_sided / 2.0
        } else {
            1.0 - two_sided / 2.0
        }
    }

    /// The density, for Newton steps: 1 / (√df B(df/2, 1/2)) (1 + t²/df)^(−(df+1)/2).
    fn pdf(&self, t: f64) -> f64 {
        let df = self.df;
        if df >= NORMAL_DF {
            return (-t * t / 2.0).exp() / (2.0 * PI).sqrt();
        }
        (-self.ln_b - 0.5 * df.ln() - (df + 1.0) / 2.0 * (t * t / df).ln_1p()).exp()
    }
}

/// A normal quantile good to about 1e-9 (Acklam's rational approximation):
/// the starting point for the Newton iteration, and for sample-size plans.
pub(crate) fn normal_quantile_guess(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        let r = (-2.0 * q.ln()).sqrt();
        (((((C[0] * r + C[1]) * r + C[2]) * r + C[3]) * r + C[4]) * r + C[5])
            / ((((D[0] * r + D[1]) * r + D[2]) * r + D[3]) * r + 1.0)
    };
    if p < 0.024_25 {
        tail(p)
    } else if p > 1.0 - 0.024_25 {
        -tail(1.0 - p)
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The p-quantile of Student's t with `df` degrees of freedom (df = ∞:
/// normal): t with P(T ≤ t) = p. p = 0 and 1 give ∓∞.
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    if p.is_nan() || df.is_nan() || df <= 0.0 || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.5 {
        return 0.0;
    }
    if p < 0.5 {
        return -student_t_quantile(1.0 - p, df);
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    if df == 1.0 {
        // Cauchy: exact.
        return (PI * (p - 0.5)).tan();
    }
    // Solve P(T > t) = q on t > 0, keeping a bracket so heavy tails at small
    // df cannot throw Newton's step out of range.
    let q = 1.0 - p;
    let dist = Student::new(df);
    let z = normal_quantile_guess(p);
    let mut t = if df >= NORMAL_DF {
        z
    } else {
        // Cornish–Fisher start: close for moderate df, bracketed otherwise.
        z + (z.powi(3) + z) / (4.0 * df)
    };
    let (mut lo, mut hi) = (0.0_f64, t.max(1.0));
    while dist.upper_tail(hi) > q {
        lo = hi;
        hi *= 2.0;
        if hi > 1e300 {
            return f64::INFINITY;
        }
    }
    if !(lo..=hi).contains(&t) {
        t = (lo + hi) / 2.0;
    }
    for _ in 0..200 {
        let excess = dist.upper_tail(t) - q;
        if excess > 0.0 {
            lo = t;
        } else {
            hi = t;
        }
        let newton = t + excess / dist.pdf(t);
        let next = if newton > lo && newton < hi && newton.is_finite() {
            newton
        } else {
            (lo + hi) / 2.0
        };
        if (next - t).abs() <= 1e-14 * t.abs().max(1.0) || hi - lo <= 1e-14 * hi {
            return next;
        }
        t = next;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(got: f64, want: f64, tol: f64) {
        assert!((got - want).abs() <= tol, "got {got}, want {want} (±{tol})");
    }

    #[test]
    fn quantiles_match_the_printed_table() {
        // Two-sided 95% (one-sided 97.5%) column of a standard t table.
        for (df, want) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (3.0, 3.182),
            (4.0, 2.776),
            (5.0, 2.571),
            (8.0, 2.306),
            (10.0, 2.228),
            (20.0, 2.086),
            (30.0, 2.042),
            (60.0, 2.000),
            (120.0, 1.980),
        ] {
            close(student_t_quantile(0.975, df), want, 5e-4);
        }
        // Other columns: one-sided 95%, 99.5%, 90%.
        close(student_t_quantile(0.95, 8.0), 1.860, 5e-4);
        close(student_t_quantile(0.95, 4.0), 2.132, 5e-4);
        close(student_t_quantile(0.995, 10.0), 3.169, 5e-4);
        close(student_t_quantile(0.90, 5.0), 1.476, 5e-4);
        close(student_t_quantile(0.025, 4.0), -2.776, 5e-4);
    }

    #[test]
    fn quantiles_to_more_digits() {
        close(student_t_quantile(0.975, 1.0), 12.706_204_736, 1e-8);
        close(student_t_quantile(0.975, 2.0), 4.302_652_730, 1e-8);
        close(student_t_quantile(0.975, 4.0), 2.776_445_105, 1e-8);
        close(student_t_quantile(0.975, 8.0), 2.306_004_135, 1e-8);
        close(student_t_quantile(0.9995, 1.0), 636.619_248_9, 1e-5);
        // Large df approaches the normal 1.959964; the first Cornish–Fisher
        // term says by (z³ + z) / 4df.
        close(student_t_quantile(0.975, 1000.0), 1.962_339_081, 1e-8);
        close(student_t_quantile(0.975, 1e6), 1.959_966_36, 1e-7);
        close(
            student_t_quantile(0.975, f64::INFINITY),
            1.959_963_985,
            1e-8,
        );
        close(student_t_quantile(0.95, f64::INFINITY), 1.644_853_627, 1e-8);
    }

    #[test]
    fn the_975_quantile_matches_published_tables() {
        // Student's t table (3 decimals), df 1-5, 10, 30.
        for (df, t) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (3.0, 3.182),
            (4.0, 2.776),
            (5.0, 2.571),
            (10.0, 2.228),
            (30.0, 2.042),
        ] {
            close(student_t_quantile(0.975, df), t, 6e-4);
        }
    }

    #[test]
    fn cdf_known_values() {
        close(student_t_cdf(0.0, 3.0), 0.5, 1e-15);
        // df = 1 is Cauchy: 1/2 + atan(t)/π.
        close(student_t_cdf(1.0, 1.0), 0.75, 1e-13);
        // df = 2 has a closed form: 1/2 + t / (2√(2 + t²)).
        let t: f64 = 1.3;
        close(
            student_t_cdf(t, 2.0),
            0.5 + t / (2.0 * (2.0 + t * t).sqrt()),
            1e-13,
        );
        close(student_t_cdf(-2.776_445_105, 4.0), 0.025, 1e-9);
        close(
            student_t_upper_tail(1.959_963_985, f64::INFINITY),
            0.025,
            1e-9,
        );
        // Density: Cauchy at 0 is 1/π; elsewhere the CDF's slope.
        close(Student::new(1.0).pdf(0.0), 1.0 / PI, 1e-14);
        let (h, d) = (1e-5, Student::new(4.5));
        let slope = (student_t_cdf(0.7 + h, 4.5) - student_t_cdf(0.7 - h, 4.5)) / (2.0 * h);
        close(d.pdf(0.7), slope, 1e-9);
        // The far tail keeps its relative precision.
        let far = student_t_upper_tail(50.0, 10.0);
        assert!(far > 0.0 && far < 1e-12, "{far}");
    }

    #[test]
    fn incomplete_beta_closed_forms() {
        let x: f64 = 0.3;
        close(regularized_incomplete_beta(2.5, 1.0, x), x.powf(2.5), 1e-14);
        close(
            regularized_incomplete_beta(1.0, 3.5, x),
            1.0 - (1.0 - x).powf(3.5),
            1e-14,
        );
        close(regularized_incomplete_beta(7.0, 7.0, 0.5), 0.5, 1e-14);
        assert_eq!(regularized_incomplete_beta(2.0, 2.0, 0.0), 0.0);
        assert_eq!(regularized_incomplete_beta(2.0, 2.0, 1.0), 1.0);
        close(ln_gamma(5.0), 24f64.ln(), 1e-13);
        close(ln_gamma(0.5), PI.sqrt().ln(), 1e-13);
    }

    #[test]
    fn bad_arguments_give_nan() {
        assert!(student_t_quantile(1.5, 4.0).is_nan());
        assert!(student_t_quantile(0.5, 0.0).is_nan());
        assert!(student_t_cdf(1.0, -1.0).is_nan());
        assert_eq!(student_t_quantile(1.0, 4.0), f64::INFINITY);
        assert_eq!(student_t_quantile(0.0, 4.0), f64::NEG_INFINITY);
    }

    proptest! {
        #[test]
        fn quantile_inverts_the_cdf(p in 0.001f64..0.999, df in 0.5f64..500.0) {
            let t = student_t_quantile(p, df);
            prop_assert!((student_t_cdf(t, df) - p).abs() < 1e-10, "p {} df {} t {}", p, df, t);
        }

        #[test]
        fn cdf_is_monotone(a in -20f64..20.0, b in -20f64..20.0, df in 0.5f64..100.0) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(student_t_cdf(lo, df) <= student_t_cdf(hi, df) + 1e-15);
        }
    }
}
