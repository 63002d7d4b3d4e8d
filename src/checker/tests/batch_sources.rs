//! Table tests of batches a package helper draws, in another module: the
//! draw is followed through the helper's calls to tell whether each worker
//! gets its own batches.

use super::*;

const LOOP: &str = "from batches import Examples\ndata = Examples()\nfor step in range(max(1, 100 // hvd.size())):\n    x = data.next_rows(8)\n";

fn helper(body: &str) -> String {
    format!(
        "import numpy as np\nimport random\n\nclass Examples:\n    def __init__(self):\n        self.rows = np.arange(1000)\n\n{body}"
    )
}

#[test]
fn batches_a_helper_draws() {
    let random_rows = helper(
        "    def next_rows(self, count):\n        return self.rows[self._indices(count)]\n\n    def _indices(self, count):\n        return np.random.randint(0, len(self.rows), size=count)\n",
    );
    let python_random = helper(
        "    def next_rows(self, count):\n        return random.sample(list(self.rows), count)\n",
    );
    let first_rows = helper("    def next_rows(self, count):\n        return self.rows[:count]\n");
    let cases: [(&str, String, &String, Verdict); 5] = [
        (
            "NumPy's process state, through a second method",
            with(HEADER, LOOP),
            &random_rows,
            Verdict::Proven,
        ),
        (
            "Python's `random`",
            with(HEADER, LOOP),
            &python_random,
            Verdict::Proven,
        ),
        (
            "the same rows every call",
            with(HEADER, LOOP),
            &first_rows,
            Verdict::Unknown,
        ),
        (
            "a fixed seed in the training module: every worker draws the same rows",
            with(
                HEADER,
                &format!("import numpy as np\nnp.random.seed(7)\n{LOOP}"),
            ),
            &random_rows,
            Verdict::Unknown,
        ),
        (
            "a seed per rank",
            with(
                HEADER,
                &format!("import numpy as np\nnp.random.seed(7 + hvd.rank())\n{LOOP}"),
            ),
            &random_rows,
            Verdict::Proven,
        ),
    ];
    for (name, train, batches, expected) in cases {
        assert_eq!(
            verdict_of(DATA_DIFFERS, &train, Some(("batches.py", batches))),
            expected,
            "{name}"
        );
    }
}

#[test]
fn a_pipeline_a_helper_shuffles() {
    let train = with(
        HEADER,
        "import inputs\nfeatures = inputs.batches(32)\nfor step in range(max(1, 100 // hvd.size())):\n    pass\n",
    );
    let pipeline = |shuffle: &str| {
        format!(
            "import tensorflow as tf\n\ndef batches(size):\n    return tf.data.Dataset.range(1000){shuffle}.repeat().batch(size)\n"
        )
    };
    let cases = [
        (
            "shuffled with no seed",
            pipeline(".shuffle(1000)"),
            Verdict::Proven,
        ),
        (
            "shuffled with a fixed seed",
            pipeline(".shuffle(1000, seed=4)"),
            Verdict::Unknown,
        ),
        ("never shuffled", pipeline(""), Verdict::Unknown),
    ];
    for (name, inputs, expected) in cases {
        assert_eq!(
            verdict_of(DATA_DIFFERS, &train, Some(("inputs.py", &inputs))),
            expected,
            "{name}"
        );
    }
}

#[test]
fn a_split_a_helper_module_draws() {
    let helper = "import numpy as np\n\ndef load_rows():\n    table = np.arange(1000)\n    order = np.random.permutation(len(table))\n    return table[order[:800]], table[order[800:]]\n";
    let training = |seeds: (&str, &str)| {
        with(
            HEADER,
            &format!(
                "import numpy as np\nfrom rows import load_rows\n{}train_rows, held_out = load_rows()\n{}for step in range(max(1, 100 // hvd.size())):\n    batch = np.random.choice(train_rows, 8)\n",
                seeds.0, seeds.1
            ),
        )
    };
    assert_eq!(
        verdict_of(DATA_DIFFERS, &training(("", "")), Some(("rows.py", helper))),
        Verdict::Unknown,
        "each worker draws its own split in the helper"
    );
    assert_eq!(
        verdict_of(
            DATA_DIFFERS,
            &training(("np.random.seed(0)\n", "np.random.seed(hvd.rank())\n")),
            Some(("rows.py", helper))
        ),
        Verdict::Proven,
        "a shared seed before the helper's split, a per-rank one after it"
    );
}
