//! Table tests of training loops over collections each rank filters with
//! random draws of its own (invariant 8).

use super::*;

const BATCHES: &str = "def get_batches(words, size):\n    for i in range(0, len(words) // size * size, size):\n        yield words[i:i + size]\n";

fn program(kept: &str) -> String {
    with(
        HEADER,
        &format!(
            "import random\nimport numpy as np\nwords = list(range(1000))\n{kept}{BATCHES}x = tf.Variable(1.0)\nopt = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1))\ntrain_op = opt.minimize(x * x)\nsess = tf.Session()\nfor epoch in range(3):\n    batches = get_batches(kept, 10)\n    for batch in batches:\n        sess.run(train_op)\n"
        ),
    )
}

#[test]
fn a_loop_over_what_random_draws_kept() {
    assert_table(
        COLLECTIVES_ALIGNED,
        &[
            (
                "words kept by a random draw in a comprehension",
                Verdict::Unknown,
                &program("kept = [w for w in words if random.random() < 0.5]\n"),
            ),
            (
                "rows kept by a random mask",
                Verdict::Unknown,
                &program("rows = np.array(words)\nkept = rows[np.random.rand(len(rows)) < 0.5]\n"),
            ),
            (
                "words kept by a test that draws nothing",
                Verdict::Proven,
                &program("kept = [w for w in words if w % 2 == 0]\n"),
            ),
            (
                "every word, each drawn a random partner (the count is fixed)",
                Verdict::Proven,
                &program("kept = [(w, random.randint(0, 9)) for w in words]\n"),
            ),
        ],
    );
}

const RANK_ROWS: &str = "def rank_rows(rows):\n    return rows[hvd.rank()::hvd.size()]\n\n";

/// Rows split off at random group by group, shared out by rank inside a
/// function that fits them (`kept` is made before it by `made`).
fn fitted(made: &str) -> String {
    with(
        KERAS,
        &format!(
            "import numpy as np\nimport pandas as pd\n{RANK_ROWS}def run(model, x):\n    model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.01)), loss='mse')\n    model.fit(rank_rows(x), epochs=2)\n\ntable = pd.DataFrame({{'a': np.arange(100), 'group': np.arange(100) % 4}})\n{made}run(model, kept.to_numpy())\n"
        ),
    )
}

const BY_GROUP: &str = "parts = []\nfor name, group in table.groupby('group'):\n    chosen = np.random.rand(len(group)) <= 0.5\n    parts.append(group[chosen])\nkept = pd.concat(parts)\n";

#[test]
fn rows_shared_out_after_a_random_draw_kept_them() {
    assert_table(
        COLLECTIVES_ALIGNED,
        &[
            (
                "rows appended group by group under a random mask, passed to the fitting function",
                Verdict::Unknown,
                &fitted(BY_GROUP),
            ),
            (
                "rows kept by the complement of a random mask",
                Verdict::Unknown,
                &fitted("mask = np.random.rand(len(table)) < 0.8\nkept = table[~mask]\n"),
            ),
            (
                "the same draw on every rank: one seed before it",
                Verdict::Proven,
                &fitted(&format!("np.random.seed(42)\n{BY_GROUP}")),
            ),
            (
                "a seed made per rank before the draw",
                Verdict::Unknown,
                &fitted(&format!("np.random.seed(42 + hvd.rank())\n{BY_GROUP}")),
            ),
            (
                "rows kept by a test that draws nothing",
                Verdict::Proven,
                &fitted("kept = table[table['a'] % 2 == 0]\n"),
            ),
            (
                "rows reordered at random (the count is fixed)",
                Verdict::Proven,
                &fitted("kept = table.iloc[np.random.permutation(len(table))]\n"),
            ),
        ],
    );
}
