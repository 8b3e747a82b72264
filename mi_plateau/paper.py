"""The paper's numbers, as data: "Marginals Before Conditionals" (arXiv 2603.10074), its tables
as printed. One home for every reference column the toolkit draws beside its own measurements;
nothing here is computed, and nothing of ours is tuned toward it."""

from __future__ import annotations

# Table 1: batch size at K = 20, lr 1e-3: B -> tau in steps
TABLE1 = {32: 23200, 64: 7200, 128: 3200, 256: 1600, 512: 1000}
# Table 1 (and Figure 2(a)): B -> tau_tok, the tokens to tau in thousands
TABLE1_TOKENS = {32: 742, 64: 461, 128: 410, 256: 410, 512: 512}
STEP_RATIO = 23.2  # Table 1: steps to tau at B = 32 over B = 512 ("the 23x step ratio")
TOKEN_RATIO = 1.81  # Table 1: tokens to tau at B = 32 over B = 128 ("1.8x" in Figure 2(a) and Table 12)
# Table 2: directional asymmetry: K -> (tau_fwd, tau_bwd, ratio, transfer)
TABLE2 = {
    5: (2650, 600, 4.4, 0.75),
    10: (5400, 1400, 3.9, 0.88),
    20: (9500, 3200, 3.0, 1.07),
    36: (13050, 7600, 1.7, 1.31),
}
# Table 3: K -> tau (steps) at n_b = 1000
TABLE3 = {3: 450, 5: 800, 7: 1050, 10: 1850, 13: 2100, 17: 3300, 20: 3950, 25: 5250, 30: 6950, 36: 8750}
FIT = {"slope": 1.19, "ci": [1.14, 1.31], "r2": 0.98}  # Table 3's power law tau ~ D^delta
# Table 4: (D, K, lr) -> (mean, std) of the transition width over three seeds (std with ddof 0)
TABLE4 = {
    (5000, 5, 5e-3): (2850, 1727),
    (5000, 5, 7e-3): (3250, 2295),
    (5000, 5, 1e-2): (2183, 504),
    (10000, 10, 3e-3): (5950, 2299),
    (10000, 10, 5e-3): (9867, 3838),
    (10000, 10, 7e-3): (8533, 1893),
}
# Table 5: alpha -> (delta, 95% interval)
TABLE5 = {
    0.3: (1.22, [1.16, 1.34]),
    0.4: (1.20, [1.13, 1.32]),
    0.5: (1.20, [1.14, 1.30]),
    0.6: (1.17, [1.11, 1.31]),
    0.7: (1.12, [1.07, 1.23]),
}
FIXED_D_SLOPE = -0.004  # Figure 5 / Table 12: tau ~ K^delta at fixed D
# Table 6: K -> (step, frac of tau, % groups >= 80%, % at 100%, mean accuracy)
TABLE6 = {
    10: [
        (500, 0.27, 0.0, 0.0, 0.118),
        (900, 0.49, 0.0, 0.0, 0.154),
        (1800, 0.97, 31.5, 1.5, 0.645),
        (2800, 1.51, 99.0, 75.0, 0.969),
    ],
    20: [(1900, 0.48, 0.0, 0.0, 0.083), (2900, 0.73, 0.0, 0.0, 0.192)],
}
# Table 7: len_z -> (plateau nats, plateau / log K, tau)
TABLE7 = {1: (2.34, 1.017, 1650), 2: (2.39, 1.037, 1850), 3: (2.33, 1.014, 1500), 4: (2.32, 1.007, 1450)}
PLATEAU_RATIO, PLATEAU_DIGITS = 1.0, 3  # the abstract: "a plateau at exactly log K"; Table 7 prints 3 decimals
# Table 8: K (D = 1000 K) -> (largest all-succeed lr, smallest any-fail lr, eta* = their geometric mean)
TABLE8 = {
    5: (1.0e-2, 1.5e-2, 1.2e-2),
    10: (7.0e-3, 1.0e-2, 8.4e-3),
    20: (3.0e-3, 5.0e-3, 3.9e-3),
    36: (1.0e-3, 2.0e-3, 1.4e-3),
}
# Table 9: K -> phase -> top heads by Delta L when zeroing each head
TABLE9 = {
    10: {"Pre": [("L0H3", 0.019), ("L0H1", 0.012)], "Mid": [("L0H3", 1.41), ("L0H0", 1.30), ("L0H2", 1.28)]},
    20: {"Pre": [("L0H3", 0.022), ("L0H0", 0.015)], "Mid": [("L0H3", 1.72), ("L0H0", 1.07), ("L0H2", 1.05)]},
}
# Table 10: K -> (mean anisotropy |lambda_max / lambda_min|, lambda_max)
TABLE10 = {3: (17700, 9.83), 5: (11700, 5.90), 10: (10800, 4.59), 20: (12100, 2.83), 36: (17600, 0.95)}
# Table 11: (K, lr) -> Q, the gradient dissipation during the transition
TABLE11 = {
    (5, 3e-4): 2.72,
    (5, 1e-3): 3.96,
    (5, 3e-3): 7.05,
    (10, 3e-4): 5.92,
    (10, 1e-3): 7.42,
    (10, 3e-3): 3.48,
    (20, 3e-4): 16.4,
    (20, 1e-3): 9.90,
    (20, 3e-3): 159.8,
}
# The learning-rate sweep (K = 20): lr -> transition width; the abstract's 3.6x across a 7x range
LR_SWEEP = {3e-4: 2100, 5e-4: 2200, 1e-3: 3400, 2e-3: 7550}
LR_RATIO = 3.6
LABEL_NOISE_DELAY = 16.0  # Figure 2b: the delay in tokens at p = 0.2
LEAD_FRACTION = 0.5  # the abstract: "leading the loss transition by ~50% of the waiting time"
DESCENT_COS = (0.0, 0.8, 0.8)  # Figure 3(b) prints none: SPEC 5's reading, plateau / pre / post window
# Table 12, gradient cancellation: the slope of log(mean duration + 1) against log(n_b / G)
CANCELLATION_BETA = 0.02
# Table 12, the tested mechanisms as printed: key -> hypothesis, prediction, result, verdict
TABLE12 = {
    "cancellation": {
        "hypothesis": "Gradient cancellation drives plateau",
        "prediction": "tau ~ number of groups G",
        "result": "beta ~ 0.02; no scaling with G",
        "verdict": "Falsified",
    },
    "barrier": {
        "hypothesis": "Barrier crossing (noise helps)",
        "prediction": "More noise -> faster escape",
        "result": "LR: 3.6x slower; BS: 1.8x (tokens)",
        "verdict": "Falsified",
    },
    "coverage": {
        "hypothesis": "Incremental group coverage",
        "prediction": "Groups solved independently over time",
        "result": "0% of groups >= 80% at tau/2",
        "verdict": "Falsified",
    },
    "label_noise": {
        "hypothesis": "Label noise breaks symmetry",
        "prediction": "Noise perturbs away from flat solution",
        "result": "16x delay (p = 0.2); confounded",
        "verdict": "Falsified (confounded)",
    },
    "k_effect": {
        "hypothesis": "K drives duration",
        "prediction": "tau ~ K^delta at fixed D",
        "result": "delta = -0.004; no K effect",
        "verdict": "Falsified",
    },
    "linear": {
        "hypothesis": "Linear networks suffice",
        "prediction": "Two-layer linear escapes",
        "result": "Stays at log K permanently",
        "verdict": "Falsified",
    },
}
