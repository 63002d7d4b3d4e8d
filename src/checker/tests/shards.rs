//! Table tests of shards: where they sit in the pipeline, and whether every
//! worker gets the same count of different examples.

use super::*;

const EQUAL_SHARD: &str = "def equal_shard(dataset):\n    count = tf.data.experimental.cardinality(dataset)\n    return dataset.shard(hvd.size(), hvd.rank()).take(count // hvd.size())\n";
const TRAIN: &str = "opt = hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.1))\nfor x in ds:\n    opt.minimize(lambda: x, [])\n";

fn program(pipeline: &str) -> String {
    with(HEADER, &format!("{EQUAL_SHARD}{pipeline}{TRAIN}"))
}

#[test]
fn shard_of_a_shuffled_stream() {
    assert_table(
        DATA_DIFFERS,
        &[
            (
                "zip of streams each worker shuffles its own way, then sharded",
                Verdict::Unknown,
                &program(
                    "a = tf.data.Dataset.range(100).shuffle(100)\nb = tf.data.Dataset.range(100).shuffle(100)\nds = tf.data.Dataset.zip((a, b)).apply(equal_shard)\n",
                ),
            ),
            (
                "zip of streams shuffled with one shared seed, then sharded",
                Verdict::Proven,
                &program(
                    "a = tf.data.Dataset.range(100).shuffle(100, seed=3)\nb = tf.data.Dataset.range(100).shuffle(100, seed=3)\nds = tf.data.Dataset.zip((a, b)).apply(equal_shard)\n",
                ),
            ),
            (
                "file names listed in an order of each process's own, then sharded",
                Verdict::Unknown,
                &program("ds = tf.data.Dataset.list_files('*.tfrecord').apply(equal_shard)\n"),
            ),
            (
                "file names listed in one order, then sharded",
                Verdict::Proven,
                &program(
                    "ds = tf.data.Dataset.list_files('*.tfrecord', shuffle=False).apply(equal_shard)\n",
                ),
            ),
            (
                "file names shuffled with a seed every worker shares, then sharded",
                Verdict::Proven,
                &program(
                    "ds = tf.data.Dataset.list_files('*.tfrecord', seed=4).apply(equal_shard)\n",
                ),
            ),
            (
                "sharded at the source, shuffled after",
                Verdict::Proven,
                &program("ds = tf.data.Dataset.range(100).apply(equal_shard).shuffle(100)\n"),
            ),
            (
                "windows shuffled with their own seed, under one global seed, then sharded",
                Verdict::Proven,
                &program(
                    "import numpy as np\ntf.random.set_seed(7)\nds = tf.keras.utils.timeseries_dataset_from_array(np.arange(100), None, 10, shuffle=True, seed=3).apply(equal_shard)\n",
                ),
            ),
            (
                "windows shuffled with their own seed, under a global seed made per rank, then sharded",
                Verdict::Unknown,
                &program(
                    "import numpy as np\ntf.random.set_seed(7 + hvd.rank())\nds = tf.keras.utils.timeseries_dataset_from_array(np.arange(100), None, 10, shuffle=True, seed=3).apply(equal_shard)\n",
                ),
            ),
            (
                "a stream shuffled with a fixed seed, under a global seed made per rank, then sharded",
                Verdict::Unknown,
                &program(
                    "tf.random.set_seed(7 + hvd.rank())\nds = tf.data.Dataset.range(100).shuffle(100, seed=3).apply(equal_shard)\n",
                ),
            ),
        ],
    );
}

#[test]
fn collectives_aligned_over_shards() {
    assert_table(
        COLLECTIVES_ALIGNED,
        &[
            (
                "plain shard run to its end",
                Verdict::Unknown,
                &program(
                    "ds = tf.data.Dataset.range(1001).shard(hvd.size(), hvd.rank()).batch(50)\n",
                ),
            ),
            (
                "equal shard of a counted source",
                Verdict::Proven,
                &program(
                    "ds = tf.data.Dataset.from_tensor_slices(tf.zeros((1001, 2))).apply(equal_shard).batch(50)\n",
                ),
            ),
            (
                "equal shard of records nobody counted",
                Verdict::Unknown,
                &program(
                    "ds = tf.data.TFRecordDataset('data.tfrecord').apply(equal_shard).batch(50)\n",
                ),
            ),
            (
                "equal shard of a list of files",
                Verdict::Unknown,
                &program(
                    "ds = tf.data.Dataset.list_files('*.tfrecord').apply(equal_shard).interleave(tf.data.TFRecordDataset)\n",
                ),
            ),
            (
                "plain shard, repeated later: a bound stops the loop",
                Verdict::Proven,
                &program(
                    "ds = tf.data.Dataset.range(1001).shard(hvd.size(), hvd.rank())\nds = ds.repeat().batch(50).take(100 // hvd.size())\n",
                ),
            ),
            (
                "a look-alike helper that cuts nothing is no equal shard",
                Verdict::Unknown,
                &with(
                    HEADER,
                    &format!(
                        "def equal_shard(dataset):\n    return dataset.shard(hvd.size(), hvd.rank())\nds = tf.data.Dataset.range(1001).apply(equal_shard).batch(50)\n{TRAIN}"
                    ),
                ),
            ),
        ],
    );
}

#[test]
fn shards_of_a_windowed_series() {
    let series = "series = tf.zeros((1001,))\n";
    let windows = ".window(21, shift=1, drop_remainder=True).flat_map(lambda w: w.batch(21))\n";
    let before = program(&format!(
        "{series}ds = tf.data.Dataset.from_tensor_slices(series).apply(equal_shard)\nds = ds{windows}"
    ));
    let after = program(&format!(
        "{series}ds = tf.data.Dataset.from_tensor_slices(series)\nds = ds.window(21, shift=1, drop_remainder=True).apply(equal_shard)\nds = ds.flat_map(lambda w: w.batch(21))\n"
    ));
    let plain_before = program(&format!(
        "{series}ds = tf.data.Dataset.from_tensor_slices(series).shard(hvd.size(), hvd.rank()){windows}"
    ));
    assert_table(
        DATA_DIFFERS,
        &[
            (
                "series sharded, then cut into windows",
                Verdict::Violated,
                &before,
            ),
            (
                "series sharded in the same chain as its windows",
                Verdict::Violated,
                &plain_before,
            ),
            ("windows sharded", Verdict::Proven, &after),
        ],
    );
    assert_table(
        COLLECTIVES_ALIGNED,
        &[(
            "equal shard of the windows of a counted series",
            Verdict::Proven,
            &after,
        )],
    );
}

#[test]
fn rows_made_from_a_shard_shared_again() {
    let rank_rows = "def rank_rows(rows):\n    usable = len(rows) // hvd.size() * hvd.size()\n    return rows[hvd.rank():usable:hvd.size()]\n";
    let features = "def features_of(dataset):\n    return np.concatenate([x for x, y in dataset]), np.concatenate([y for x, y in dataset])\n";
    let program = |source: &str| {
        with(
            KERAS,
            &format!(
                "import numpy as np\n{EQUAL_SHARD}{rank_rows}{features}ds = tf.data.Dataset.from_tensor_slices((np.ones((64, 2)), np.ones(64))).batch(8){source}\nxs, ys = features_of(ds)\nmodel.fit(rank_rows(xs), rank_rows(ys), epochs=1)\n"
            ),
        )
    };
    assert_table(
        WORK_SPLIT,
        &[
            (
                "rows made from a sharded stream, then shared out by rank",
                Verdict::Unknown,
                &program(".apply(equal_shard)"),
            ),
            (
                "rows made from the whole stream, then shared out by rank",
                Verdict::Proven,
                &program(""),
            ),
        ],
    );
}
