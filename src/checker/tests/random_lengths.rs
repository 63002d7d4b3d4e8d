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
