//! Table tests of reads of what rank 0 wrote: a folder of files a helper
//! copies on rank 0, then read by a data source on every rank.

use super::*;

const MAKE_SUBSET: &str = "import shutil\nimport pathlib\nbase = pathlib.Path('small')\ndef make_subset(name):\n    for fname in ['a.jpg', 'b.jpg']:\n        if hvd.rank() == 0:\n            shutil.copyfile(pathlib.Path('all') / fname, base / name / fname)\n";

fn program(between: &str, read: &str) -> String {
    with(
        KERAS,
        &format!("{MAKE_SUBSET}make_subset('train')\n{between}{read}"),
    )
}

#[test]
fn a_folder_rank_zero_filled_in_a_helper() {
    let images = "ds = tf.keras.utils.image_dataset_from_directory(base / 'train', seed=0)\n";
    let flow = "gen = tf.keras.preprocessing.image.ImageDataGenerator().flow_from_directory(base / 'train', seed=0)\n";
    let barrier = "hvd.allreduce(0, name='read_barrier')\n";
    assert_table(
        RANK_ZERO_WRITES,
        &[
            (
                "image folders read on every rank with no barrier",
                Verdict::Unknown,
                &program("", images),
            ),
            (
                "image folders read after a barrier",
                Verdict::Proven,
                &program(barrier, images),
            ),
            (
                "a generator's folders read with no barrier",
                Verdict::Unknown,
                &program("", flow),
            ),
            (
                "a generator's folders read after a barrier",
                Verdict::Proven,
                &program(barrier, flow),
            ),
            (
                "another folder than the one written",
                Verdict::Proven,
                &with(
                    KERAS,
                    &format!(
                        "{MAKE_SUBSET}make_subset('train')\nds = tf.keras.utils.image_dataset_from_directory('elsewhere', seed=0)\n"
                    ),
                ),
            ),
        ],
    );
}

#[test]
fn files_moved_on_rank_zero_while_every_rank_lists_them() {
    let program = |barrier: &str| {
        with(
            KERAS,
            &format!(
                "import os\nimport shutil\nimport pathlib\ntrain_dir = pathlib.Path('train')\nval_dir = pathlib.Path('val')\nfor category in ('neg', 'pos'):\n    files = os.listdir(train_dir / category)\n{barrier}    for fname in files[:10]:\n        if hvd.rank() == 0:\n            shutil.move(train_dir / category / fname, val_dir / category / fname)\n        hvd.allreduce(0, name='moved')\n"
            ),
        )
    };
    assert_table(
        RANK_ZERO_WRITES,
        &[
            (
                "listed on every rank, then moved on rank 0 with no barrier between",
                Verdict::Unknown,
                &program(""),
            ),
            (
                "listed on every rank, a barrier, then moved on rank 0",
                Verdict::Proven,
                &program("    hvd.allreduce(0, name='listed')\n"),
            ),
            (
                "old files listed on every rank, removed and written by rank 0 alone",
                Verdict::Proven,
                &with(
                    KERAS,
                    "import os\nimport shutil\nfor epoch in range(3):\n    model.fit(ds, epochs=1)\n    for old in os.listdir('out'):\n        if hvd.rank() == 0:\n            shutil.rmtree(os.path.join('out', old))\n    if hvd.rank() == 0:\n        model.save_weights(os.path.join('out', 'weights-%d' % epoch))\n",
                ),
            ),
        ],
    );
}
