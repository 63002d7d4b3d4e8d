//! Table tests: each invariant decided on small programs that already use
//! Horovod, in the forms it has (proven, violated, unknown).

use super::invariants::*;
use super::{Checker, Program, Verdict};
use crate::analysis::package::Package;
use crate::analysis::training::Analysis;
use crate::diagnostics::Code;

/// The worst verdict of one invariant on `train.py` (with another module
/// beside it when given: its file name and text); `Proven` when the
/// invariant has nothing to decide.
fn verdict_of(code: Code, source: &str, other: Option<(&str, &str)>) -> Verdict {
    let directory = tempfile::tempdir().unwrap();
    std::fs::write(directory.path().join("train.py"), source).unwrap();
    let mut files = vec!["train.py".to_string()];
    if let Some((name, text)) = other {
        std::fs::write(directory.path().join(name), text).unwrap();
        files.push(name.to_string());
    }
    let package = Package::load(directory.path(), &files);
    assert!(package.problems.is_empty(), "{:?}", package.problems);
    let analysis = Analysis::new(&package);
    let module = analysis
        .modules
        .iter()
        .find(|module| module.module.source.relative_path == "train.py")
        .unwrap();
    let program = Program {
        analysis: &analysis,
        module,
        text: &module.module.source.text,
        generated: std::iter::once(0..source.len()).collect(),
        origin: None,
        written_with_horovod: false,
        resolved_calls: Default::default(),
    };
    let invariant = ALL
        .iter()
        .find(|invariant| invariant.code() == code)
        .unwrap();
    invariant
        .check(&program)
        .iter()
        .map(|decision| decision.verdict)
        .max()
        .unwrap_or(Verdict::Proven)
}

fn assert_table(code: Code, cases: &[(&str, Verdict, &str)]) {
    for (name, expected, source) in cases {
        assert_eq!(
            verdict_of(code, source, None),
            *expected,
            "{} {name}:\n{source}",
            code.id()
        );
    }
}

const HEADER: &str = "import tensorflow as tf\nimport horovod.tensorflow as hvd\nhvd.init()\n";
const KERAS: &str = "import tensorflow as tf\nimport horovod.tensorflow.keras as hvd\nhvd.init()\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n";

fn with(header: &str, body: &str) -> String {
    format!("{header}{body}")
}

mod batch_sources;
mod random_lengths;
mod reads_after_writes;
mod shards;

#[test]
fn init_before_use() {
    assert_table(
        INIT_BEFORE_USE,
        &[
            (
                "init first",
                Verdict::Proven,
                "import horovod.tensorflow as hvd\nhvd.init()\nprint(hvd.rank())\n",
            ),
            (
                "rank before init",
                Verdict::Violated,
                "import horovod.tensorflow as hvd\nprint(hvd.rank())\nhvd.init()\n",
            ),
            (
                "import after use",
                Verdict::Violated,
                "hvd.init()\nimport horovod.tensorflow as hvd\n",
            ),
            (
                "star import",
                Verdict::Unknown,
                "from settings import *\nimport horovod.tensorflow as hvd\nhvd.init()\nrate = base_rate * hvd.size()\n",
            ),
        ],
    );
}

#[test]
fn gradients_averaged() {
    let fit = "model.fit(tf.zeros((8, 2)), tf.zeros((8, 1)), epochs=max(1, 4 // hvd.size()), callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])\n";
    assert_table(
        GRADIENTS_AVERAGED,
        &[
            (
                "wrapped",
                Verdict::Proven,
                &with(
                    KERAS,
                    &format!(
                        "opt = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.001 * hvd.size()))\nmodel.compile(optimizer=opt, loss='mse')\n{fit}"
                    ),
                ),
            ),
            (
                "string optimizer",
                Verdict::Violated,
                &with(
                    KERAS,
                    &format!("model.compile(optimizer='adam', loss='mse')\n{fit}"),
                ),
            ),
            (
                "a second model compiled with a string optimizer only to be evaluated",
                Verdict::Proven,
                &with(
                    KERAS,
                    &format!(
                        "opt = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.001 * hvd.size()))\nmodel.compile(optimizer=opt, loss='mse')\n{fit}export_model = tf.keras.Sequential([model])\nexport_model.compile(optimizer='adam', loss='mse')\nexport_model.evaluate(tf.zeros((8, 2)), tf.zeros((8, 1)))\n"
                    ),
                ),
            ),
            (
                "a model compiled and never fitted before its name is bound to the model that trains",
                Verdict::Proven,
                &with(
                    KERAS,
                    &format!(
                        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nmodel.compile(optimizer='sgd', loss='mse')\nmodel.summary()\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nopt = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.001 * hvd.size()))\nmodel.compile(optimizer=opt, loss='mse')\n{fit}"
                    ),
                ),
            ),
            (
                "a model compiled to load weights into, read for its layers, and passed to a function only under a parameter of the same name",
                Verdict::Proven,
                &with(
                    KERAS,
                    &format!(
                        "opt = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.001 * hvd.size()))\nmodel.compile(optimizer=opt, loss='mse')\n{fit}def probe(mc_model, x):\n    return mc_model.predict(x)\nmc_model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nmc_model.compile(optimizer='sgd', loss='mse')\nmc_model.set_weights(model.get_weights())\nfor layer in mc_model.layers:\n    print(layer.name)\nmc_model.predict(tf.zeros((8, 2)))\n"
                    ),
                ),
            ),
            (
                "the same model handed to a function",
                Verdict::Violated,
                &with(
                    KERAS,
                    &format!(
                        "opt = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.001 * hvd.size()))\nmodel.compile(optimizer=opt, loss='mse')\n{fit}def train(m):\n    m.fit(tf.zeros((8, 2)), tf.zeros((8, 1)))\nmc_model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nmc_model.compile(optimizer='sgd', loss='mse')\ntrain(mc_model)\n"
                    ),
                ),
            ),
            (
                "a model compiled, fitted, then its name bound to another",
                Verdict::Violated,
                &with(
                    KERAS,
                    &format!(
                        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nmodel.compile(optimizer='sgd', loss='mse')\n{fit}model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nmodel.summary()\n"
                    ),
                ),
            ),
            (
                "the same second model also fitted",
                Verdict::Violated,
                &with(
                    KERAS,
                    &format!(
                        "opt = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.001 * hvd.size()))\nmodel.compile(optimizer=opt, loss='mse')\n{fit}export_model = tf.keras.Sequential([model])\nexport_model.compile(optimizer='adam', loss='mse')\nexport_model.fit(tf.zeros((8, 2)), tf.zeros((8, 1)))\n"
                    ),
                ),
            ),
            (
                "optimizer built in place",
                Verdict::Violated,
                &with(
                    KERAS,
                    &format!(
                        "model.compile(optimizer=tf.keras.optimizers.Adam(), loss='mse')\n{fit}"
                    ),
                ),
            ),
            (
                "optimizer from a parameter",
                Verdict::Unknown,
                &with(
                    KERAS,
                    "def train(model, opt):\n    model.compile(optimizer=opt, loss='mse')\n    model.fit(tf.zeros((8, 2)), tf.zeros((8, 1)))\n",
                ),
            ),
            (
                "tape not wrapped",
                Verdict::Violated,
                &with(
                    HEADER,
                    "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nopt = tf.keras.optimizers.SGD(0.1)\nfor step in range(10):\n    with tf.GradientTape() as tape:\n        loss = tf.reduce_mean(model(tf.zeros((4, 2))))\n    grads = tape.gradient(loss, model.trainable_variables)\n    opt.apply_gradients(zip(grads, model.trainable_variables))\n",
                ),
            ),
            (
                "tape wrapped",
                Verdict::Proven,
                &with(
                    HEADER,
                    "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nopt = tf.keras.optimizers.SGD(0.1)\nfor step in range(10):\n    with tf.GradientTape() as tape:\n        loss = tf.reduce_mean(model(tf.zeros((4, 2))))\n    tape = hvd.DistributedGradientTape(tape)\n    grads = tape.gradient(loss, model.trainable_variables)\n    opt.apply_gradients(zip(grads, model.trainable_variables))\n",
                ),
            ),
            (
                "tf.gradients not allreduced",
                Verdict::Violated,
                &with(
                    HEADER,
                    "x = tf.Variable(1.0)\nloss = x * x\ngrads = tf.gradients(loss, [x])\nopt = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1))\ntrain = opt.apply_gradients(zip(grads, [x]))\n",
                ),
            ),
            (
                "tf.gradients not allreduced, beside a barrier's allreduce",
                Verdict::Violated,
                &with(
                    HEADER,
                    "hvd.allreduce(tf.constant(0), name='save_barrier')\nx = tf.Variable(1.0)\nloss = x * x\ngrads = tf.gradients(loss, [x])\nopt = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1))\ntrain = opt.apply_gradients(zip(grads, [x]))\n",
                ),
            ),
            (
                "chained minimize",
                Verdict::Violated,
                &with(
                    HEADER,
                    "x = tf.Variable(1.0)\ntrain = tf.train.AdamOptimizer(0.1).minimize(x * x)\n",
                ),
            ),
            (
                "a variable moved by a gradient derived by hand",
                Verdict::Violated,
                &with(
                    HEADER,
                    "w = tf.Variable(tf.zeros([2, 1]))\nerror = tf.matmul(inputs, w) - targets\ngradient = tf.reduce_sum(inputs * error, 0)\nupdate = tf.assign_sub(w, 0.01 * gradient)\n",
                ),
            ),
            (
                "a variable moved by `tf.gradients` with no optimizer",
                Verdict::Violated,
                &with(
                    HEADER,
                    "w = tf.Variable(1.0)\nstep = w.assign_sub(0.1 * tf.gradients(w * w, [w])[0])\n",
                ),
            ),
            (
                "a variable moved by an allreduced gradient",
                Verdict::Proven,
                &with(
                    HEADER,
                    "w = tf.Variable(1.0)\ngrad = hvd.allreduce(tf.gradients(w * w, [w])[0])\nstep = w.assign_sub(0.1 * grad)\n",
                ),
            ),
            (
                "a target network copied from the trained one, and a step counter",
                Verdict::Proven,
                &with(
                    HEADER,
                    "x = tf.Variable(1.0)\ntarget = tf.Variable(1.0)\ncount = tf.Variable(0)\ntrain = hvd.DistributedOptimizer(tf.train.AdamOptimizer(0.1)).minimize(x * x)\ncopy = tf.assign(target, 0.9 * target + 0.1 * x)\ntick = count.assign_add(1)\n",
                ),
            ),
        ],
    );
}

/// Two loops stepping one model, for where the broadcast goes.
const TWO_TAPE_LOOPS: &str = "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nopt = tf.keras.optimizers.SGD(0.1)\ndone = False\n";
const TAPE_STEP: &str = "    with tf.GradientTape() as tape:\n        loss = tf.reduce_sum(model(tf.ones((2, 2))))\n    tape = hvd.DistributedGradientTape(tape)\n    grads = tape.gradient(loss, model.trainable_variables)\n    opt.apply_gradients(zip(grads, model.trainable_variables))\n";
const FIRST_BROADCAST: &str = "    if not done:\n        hvd.broadcast_variables(model.variables, root_rank=0)\n        done = True\n";

/// A class whose method runs the train op of the session it is handed, and
/// a first session that trains through it, broadcast after its initialiser.
const SESSION_NET: &str = "class Net:\n    def __init__(self):\n        self.x = tf.Variable(1.0)\n        opt = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1))\n        self.train_op = opt.minimize(self.x * self.x)\n    def train(self, session):\n        for step in range(10):\n            session.run(self.train_op)\nnet = Net()\nsaver = tf.train.Saver()\n";
const TRAINING_SESSION: &str = "with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n    sess.run(hvd.broadcast_global_variables(0))\n    net.train(sess)\n    saver.save(sess, 'ckpt/model')\n";

#[test]
fn initial_state_broadcast() {
    assert_table(
        STATE_BROADCAST,
        &[
            (
                "callback",
                Verdict::Proven,
                &with(
                    KERAS,
                    "model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam()), loss='mse')\nmodel.fit(tf.zeros((8, 2)), tf.zeros((8, 1)), callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])\n",
                ),
            ),
            (
                "no callbacks",
                Verdict::Violated,
                &with(
                    KERAS,
                    "model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam()), loss='mse')\nmodel.fit(tf.zeros((8, 2)), tf.zeros((8, 1)))\n",
                ),
            ),
            (
                "a tape loop on variables made from constants, with no broadcast",
                Verdict::Proven,
                &with(
                    HEADER,
                    "W = tf.Variable(0.)\nb = tf.Variable(tf.zeros([1]))\nfor step in range(10):\n    with tf.GradientTape() as tape:\n        loss = W * W + b\n    tape = hvd.DistributedGradientTape(tape)\n    dW, db = tape.gradient(loss, [W, b])\n    W.assign_sub(0.1 * dW)\n    b.assign_sub(0.1 * db)\n",
                ),
            ),
            (
                "a tape loop on a variable drawn at random, with no broadcast",
                Verdict::Violated,
                &with(
                    HEADER,
                    "W = tf.Variable(tf.random.normal([1]))\nfor step in range(10):\n    with tf.GradientTape() as tape:\n        loss = W * W\n    tape = hvd.DistributedGradientTape(tape)\n    dW = tape.gradient(loss, W)\n    W.assign_sub(0.1 * dW)\n",
                ),
            ),
            (
                "a broadcast in the loop after the one that trains first",
                Verdict::Violated,
                &with(
                    HEADER,
                    &format!(
                        "{TWO_TAPE_LOOPS}for step in range(10):\n{TAPE_STEP}for step in range(10):\n{TAPE_STEP}{FIRST_BROADCAST}"
                    ),
                ),
            ),
            (
                "a broadcast in the loop that trains first",
                Verdict::Proven,
                &with(
                    HEADER,
                    &format!(
                        "{TWO_TAPE_LOOPS}for step in range(10):\n{TAPE_STEP}{FIRST_BROADCAST}for step in range(10):\n{TAPE_STEP}"
                    ),
                ),
            ),
            (
                "callbacks made elsewhere",
                Verdict::Unknown,
                &with(
                    KERAS,
                    "model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam()), loss='mse')\nmodel.fit(tf.zeros((8, 2)), tf.zeros((8, 1)), callbacks=make_callbacks())\n",
                ),
            ),
            (
                "two sessions handed to a method that may train, one broadcast",
                Verdict::Unknown,
                &with(
                    HEADER,
                    &format!(
                        "{SESSION_NET}{TRAINING_SESSION}with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n    net.train(sess)\n"
                    ),
                ),
            ),
            (
                "a second session that only restores and evaluates",
                Verdict::Proven,
                &with(
                    HEADER,
                    &format!(
                        "{SESSION_NET}{TRAINING_SESSION}with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n    saver.restore(sess, 'ckpt/model')\n    print(sess.run(net.x))\n"
                    ),
                ),
            ),
        ],
    );
}

#[test]
fn work_split_once() {
    let step = "    pass\n";
    assert_table(
        WORK_SPLIT,
        &[
            (
                "episodes divided while learning waits for a warm-up each worker counts",
                Verdict::Unknown,
                &with(
                    HEADER,
                    "import gym\nMEMORY = 10000\nenv = gym.make('Pendulum-v0')\nx = tf.Variable(1.0)\ntrain_op = hvd.DistributedOptimizer(tf.train.AdamOptimizer(0.1)).minimize(x * x)\nsess = tf.Session()\npointer = 0\nfor episode in range(max(1, 200 // hvd.size())):\n    for move in range(200):\n        env.step(0)\n        pointer += 1\n        if pointer > MEMORY:\n            sess.run(train_op)\n",
                ),
            ),
            (
                "episodes divided, learning from the first move",
                Verdict::Proven,
                &with(
                    HEADER,
                    "import gym\nenv = gym.make('Pendulum-v0')\nx = tf.Variable(1.0)\ntrain_op = hvd.DistributedOptimizer(tf.train.AdamOptimizer(0.1)).minimize(x * x)\nsess = tf.Session()\nt = 0\nfor episode in range(max(1, 200 // hvd.size())):\n    for move in range(200):\n        env.step(0)\n        sess.run(train_op)\n        t += 1\n        if t > 199:\n            print(t)\n",
                ),
            ),
            (
                "shard then repeat then take",
                Verdict::Proven,
                &with(
                    HEADER,
                    &format!(
                        "ds = tf.data.Dataset.range(100).shard(hvd.size(), hvd.rank()).repeat()\nfor x in ds.take(max(1, 50 // hvd.size())):\n{step}"
                    ),
                ),
            ),
            (
                "sharded twice",
                Verdict::Violated,
                &with(
                    HEADER,
                    &format!(
                        "ds = tf.data.Dataset.range(100).shard(hvd.size(), hvd.rank()).shard(hvd.size(), hvd.rank())\nfor x in ds.take(50):\n{step}"
                    ),
                ),
            ),
            (
                "shard cut by a whole take",
                Verdict::Unknown,
                &with(
                    HEADER,
                    &format!(
                        "ds = tf.data.Dataset.range(60000).shard(hvd.size(), hvd.rank()).batch(100)\nfor x in ds.take(200):\n{step}"
                    ),
                ),
            ),
            (
                "shard of a name, cut by a whole take in a later statement",
                Verdict::Unknown,
                &with(
                    HEADER,
                    &format!(
                        "ds = tf.data.Dataset.range(60000)\nds = ds.shard(hvd.size(), hvd.rank())\nds = ds.take(20000).batch(100)\nfor x in ds:\n{step}"
                    ),
                ),
            ),
            (
                "the examples taken, then sharded in the same statement",
                Verdict::Proven,
                &with(
                    HEADER,
                    &format!(
                        "ds = tf.data.Dataset.range(60000)\nds = ds.take(20000).shard(hvd.size(), hvd.rank()).batch(100)\nfor x in ds:\n{step}"
                    ),
                ),
            ),
        ],
    );
}

#[test]
fn rate_follows_split() {
    let optimizer =
        "opt = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1 * hvd.size()))\n";
    assert_table(
        RATE_FOLLOWS_SPLIT,
        &[
            (
                "scaled and divided",
                Verdict::Proven,
                &with(
                    HEADER,
                    &format!(
                        "{optimizer}for step in range(max(1, 100 // hvd.size())):\n    pass\n"
                    ),
                ),
            ),
            (
                "scaled, nothing split",
                Verdict::Violated,
                &with(
                    HEADER,
                    &format!("{optimizer}for step in range(100):\n    pass\n"),
                ),
            ),
            (
                "scaled, only a look at the first batch sharded by a helper",
                Verdict::Violated,
                &with(
                    HEADER,
                    &format!(
                        "def equal_shard(dataset):\n    count = tf.data.experimental.cardinality(dataset)\n    return dataset.shard(hvd.size(), hvd.rank()).take(count // hvd.size())\n\nds = tf.data.Dataset.range(100).batch(10)\nfor batch in ds.take(1).apply(equal_shard):\n    print(batch)\n{optimizer}for x in ds:\n    pass\n"
                    ),
                ),
            ),
            (
                "scaled, the training stream sharded by a helper",
                Verdict::Proven,
                &with(
                    HEADER,
                    &format!(
                        "def equal_shard(dataset):\n    count = tf.data.experimental.cardinality(dataset)\n    return dataset.shard(hvd.size(), hvd.rank()).take(count // hvd.size())\n\nds = tf.data.Dataset.range(100).apply(equal_shard).batch(10)\n{optimizer}for x in ds:\n    pass\n"
                    ),
                ),
            ),
        ],
    );
    // A step count divided for a schedule and given whole elsewhere: unknown
    // while both uses see one assignment, not once the name is bound again.
    let schedule = "rate = tf.keras.optimizers.schedules.ExponentialDecay(0.1 * hvd.size(), max(1, s // hvd.size()), 0.1)\nfor step in range(max(1, 100 // hvd.size())):\n    pass\n";
    let one_binding = format!("s = 1000\ndecay = StepDecay(s)\n{schedule}");
    let bound_again = format!("s = 1000\ndecay = StepDecay(s)\ns = 2000\n{schedule}");
    assert_eq!(
        verdict_of(RATE_FOLLOWS_SPLIT, &with(HEADER, &one_binding), None),
        Verdict::Unknown
    );
    assert_eq!(
        verdict_of(RATE_FOLLOWS_SPLIT, &with(HEADER, &bound_again), None),
        Verdict::Proven
    );
    // The split made in another module of the package counts.
    let scaled_here = with(HEADER, optimizer);
    let split_there = "import horovod.tensorflow as hvd\nfor step in range(max(1, 100 // hvd.size())):\n    pass\n";
    assert_eq!(
        verdict_of(
            RATE_FOLLOWS_SPLIT,
            &scaled_here,
            Some(("other.py", split_there))
        ),
        Verdict::Proven
    );
}

#[test]
fn an_unseeded_split_differs_per_worker() {
    let program = "import numpy as np\nx = np.arange(100)\nindices = np.random.permutation(100)\ntrain, test = x[indices[:80]], x[indices[80:]]\nsess = tf.Session()\n";
    assert_eq!(
        verdict_of(DATA_DIFFERS, &with(HEADER, program), None),
        Verdict::Unknown
    );
    let seeded = "import numpy as np\nnp.random.seed(3)\nx = np.arange(100)\nindices = np.random.permutation(100)\ntrain, test = x[indices[:80]], x[indices[80:]]\n";
    assert_ne!(
        verdict_of(DATA_DIFFERS, &with(HEADER, seeded), None),
        Verdict::Unknown,
        "a fixed seed draws the same split everywhere"
    );
    let in_main = |seeds: &str| {
        format!(
            "import numpy as np\ndef main():\n{seeds}    x = np.arange(100)\n    train_rows = np.random.choice(100, 80, replace=False)\n    np.random.seed(hvd.rank())\n    for step in range(max(1, 10 // hvd.size())):\n        batch = x[np.random.choice(train_rows, 8)]\n"
        )
    };
    assert_eq!(
        verdict_of(DATA_DIFFERS, &with(HEADER, &in_main("")), None),
        Verdict::Unknown,
        "a per-rank seed after the split in the same function does not draw it, and nothing seeds it before"
    );
    assert_eq!(
        verdict_of(
            DATA_DIFFERS,
            &with(HEADER, &in_main("    np.random.seed(0)\n")),
            None
        ),
        Verdict::Proven,
        "a shared seed before the split in the function, a per-rank one after it"
    );
}

#[test]
fn data_differs_per_worker() {
    let divided = "for step in range(max(1, 100 // hvd.size())):\n    pass\n";
    assert_table(
        DATA_DIFFERS,
        &[
            (
                "sharded",
                Verdict::Proven,
                &with(
                    HEADER,
                    "ds = tf.data.Dataset.range(100).shard(hvd.size(), hvd.rank())\n",
                ),
            ),
            (
                "unseeded shuffle",
                Verdict::Proven,
                &with(
                    HEADER,
                    &format!(
                        "import numpy as np\nbatch = np.random.randint(0, 10, size=4)\n{divided}"
                    ),
                ),
            ),
            (
                "fixed seed",
                Verdict::Unknown,
                &with(
                    HEADER,
                    &format!(
                        "import numpy as np\nnp.random.seed(42)\nbatch = np.random.randint(0, 10, size=4)\n{divided}"
                    ),
                ),
            ),
            (
                "per-rank seed",
                Verdict::Proven,
                &with(
                    HEADER,
                    &format!(
                        "import numpy as np\nnp.random.seed(42 + hvd.rank())\nbatch = np.random.randint(0, 10, size=4)\n{divided}"
                    ),
                ),
            ),
            (
                "deterministic cursor",
                Verdict::Unknown,
                &with(HEADER, &format!("offset = 0\n{divided}")),
            ),
            (
                "an Estimator's graph seed fixed: its shuffles draw one order",
                Verdict::Unknown,
                &with(
                    HEADER,
                    &format!(
                        "config = tf.estimator.RunConfig(tf_random_seed=42)\nds = tf.data.Dataset.range(100).shuffle(100)\n{divided}"
                    ),
                ),
            ),
            (
                "an Estimator's graph seed per rank",
                Verdict::Proven,
                &with(
                    HEADER,
                    &format!(
                        "config = tf.estimator.RunConfig(tf_random_seed=42 + hvd.rank())\nds = tf.data.Dataset.range(100).shuffle(100)\n{divided}"
                    ),
                ),
            ),
            (
                "a fixed seed let go of after the split it orders",
                Verdict::Proven,
                &with(
                    HEADER,
                    &format!(
                        "import numpy as np\nnp.random.seed(10101)\nnp.random.shuffle(rows)\nnp.random.seed(None)\nbatch = np.random.randint(0, 10, size=4)\n{divided}"
                    ),
                ),
            ),
            (
                "episodes each worker plays in its own environment",
                Verdict::Proven,
                &with(
                    HEADER,
                    "import gym\nenv = gym.make('CartPole-v0')\nfor episode in range(max(1, 100 // hvd.size())):\n    state = env.reset()\n    for move in range(50):\n        state, reward, done, info = env.step(0)\n",
                ),
            ),
            (
                "episodes played from a fixed seed",
                Verdict::Unknown,
                &with(
                    HEADER,
                    "import gym\nimport numpy as np\nnp.random.seed(3)\nenv = gym.make('CartPole-v0')\nfor episode in range(max(1, 100 // hvd.size())):\n    state = env.reset()\n    for move in range(50):\n        state, reward, done, info = env.step(np.random.randint(2))\n",
                ),
            ),
            (
                "a fit over a generator yielding batches in a fixed order, beside unrelated noise",
                Verdict::Unknown,
                &with(
                    KERAS,
                    "import numpy as np\nnoise = np.random.random(100)\ndef batches(data, size):\n    for start in range(0, len(data) - size, size):\n        yield data[start:start + size], data[start:start + size]\nmodel.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.01 * hvd.size())), loss='mse')\nmodel.fit_generator(batches(noise, 10), steps_per_epoch=max(1, 9 // hvd.size()), shuffle=False)\n",
                ),
            ),
        ],
    );
}

#[test]
fn rank_zero_writes() {
    assert_table(
        RANK_ZERO_WRITES,
        &[
            (
                "a directory made by an uncatalogued mkdir, exist_ok=True",
                Verdict::Proven,
                &with(
                    HEADER,
                    "from somelib import Folder\nimages = Folder('.') / 'images'\nimages.mkdir(parents=True, exist_ok=True)\n",
                ),
            ),
            (
                "a download run through subprocess on every rank",
                Verdict::Violated,
                &with(
                    HEADER,
                    "import subprocess\nsubprocess.check_call(['gsutil', 'cp', 'gs://bucket/data.csv', 'data.csv'])\n",
                ),
            ),
            (
                "a wget run through os.system, its URL formatted in",
                Verdict::Violated,
                &with(
                    HEADER,
                    "import os\nurl = 'https://example.com/data.zip'\nos.system(f'wget -q {url}')\n",
                ),
            ),
            (
                "a program run through subprocess that writes nothing",
                Verdict::Proven,
                &with(
                    HEADER,
                    "import subprocess\nsubprocess.run(['nvidia-smi'])\n",
                ),
            ),
            (
                "a directory made by an uncatalogued mkdir that may exist",
                Verdict::Unknown,
                &with(
                    HEADER,
                    "from somelib import Folder\nimages = Folder('.') / 'images'\nimages.mkdir(parents=True)\n",
                ),
            ),
            (
                "guarded",
                Verdict::Proven,
                &with(
                    HEADER,
                    "import numpy as np\nif hvd.rank() == 0:\n    np.save('weights.npy', [1.0])\n",
                ),
            ),
            (
                "per-rank path",
                Verdict::Proven,
                &with(
                    HEADER,
                    "import numpy as np\nnp.save('weights-%d.npy' % hvd.rank(), [1.0])\n",
                ),
            ),
            (
                "every rank",
                Verdict::Violated,
                &with(
                    HEADER,
                    "import numpy as np\nnp.save('weights.npy', [1.0])\n",
                ),
            ),
            (
                "mkdir on every rank",
                Verdict::Violated,
                &with(HEADER, "import os\nos.mkdir('checkpoints')\n"),
            ),
            (
                "makedirs exist_ok",
                Verdict::Proven,
                &with(
                    HEADER,
                    "import os\nos.makedirs('checkpoints', exist_ok=True)\n",
                ),
            ),
            (
                "download on every rank",
                Verdict::Violated,
                &with(HEADER, "(x, y), _ = tf.keras.datasets.mnist.load_data()\n"),
            ),
            (
                "download rank 0 first",
                Verdict::Proven,
                &with(
                    HEADER,
                    "if hvd.rank() == 0:\n    tf.keras.datasets.mnist.load_data()\nhvd.allreduce(tf.constant(0))\n(x, y), _ = tf.keras.datasets.mnist.load_data()\n",
                ),
            ),
            (
                "input() imported from builtins on every rank",
                Verdict::Violated,
                &with(
                    HEADER,
                    "from builtins import input\nanswer = input('again? ')\n",
                ),
            ),
            (
                "an input() of the program's own",
                Verdict::Proven,
                &with(
                    HEADER,
                    "def input(prompt):\n    return 'n'\nanswer = input('again? ')\n",
                ),
            ),
            (
                "a picture saved on rank 0 by one helper, opened by another on every rank",
                Verdict::Unknown,
                &with(
                    HEADER,
                    "from PIL import Image\ndef save(picture, epoch):\n    if hvd.rank() == 0:\n        picture.save('sample_%03d.png' % epoch)\ndef show(epoch):\n    return Image.open('sample_%03d.png' % epoch)\nsave(Image.new('RGB', (4, 4)), 3)\nshow(3)\n",
                ),
            ),
            (
                "the same, with a barrier between",
                Verdict::Proven,
                &with(
                    HEADER,
                    "from PIL import Image\ndef save(picture, epoch):\n    if hvd.rank() == 0:\n        picture.save('sample_%03d.png' % epoch)\ndef show(epoch):\n    return Image.open('sample_%03d.png' % epoch)\nsave(Image.new('RGB', (4, 4)), 3)\nhvd.allreduce(tf.constant(0))\nshow(3)\n",
                ),
            ),
            (
                "save of an unknown object",
                Verdict::Unknown,
                &with(HEADER, "def report(thing):\n    thing.save('out')\n"),
            ),
            (
                "image through its catalogued type",
                Verdict::Violated,
                &with(
                    HEADER,
                    "from PIL import Image\nimport numpy as np\nimg = Image.fromarray(np.zeros((4, 4), dtype='uint8'))\nimg.save('grid.png')\n",
                ),
            ),
            (
                "a SavedModel in a per-process folder",
                Verdict::Proven,
                &with(
                    HEADER,
                    "import os, tempfile\nexport = tempfile.mkdtemp()\ntf.saved_model.save(tf.Module(), os.path.join(export, 'model'))\n",
                ),
            ),
            (
                "a read of rank 0's file with no barrier",
                Verdict::Unknown,
                &with(
                    HEADER,
                    "import numpy as np\nif hvd.rank() == 0:\n    np.save('weights.npy', [1.0])\nw = np.load('weights.npy')\n",
                ),
            ),
            (
                "a read of rank 0's file after a barrier",
                Verdict::Proven,
                &with(
                    HEADER,
                    "import numpy as np\nif hvd.rank() == 0:\n    np.save('weights.npy', [1.0])\nhvd.allreduce(tf.constant(0), name='read_barrier')\nw = np.load('weights.npy')\n",
                ),
            ),
            (
                "weights loaded after a rank-0 checkpoint callback, no barrier",
                Verdict::Unknown,
                &with(
                    KERAS,
                    "checkpoint = tf.keras.callbacks.ModelCheckpoint('best.h5')\nmodel.fit([[1.0]], [[1.0]], callbacks=[*([checkpoint] if hvd.rank() == 0 else [])])\nmodel.load_weights('best.h5')\n",
                ),
            ),
            (
                "weights loaded after a rank-0 checkpoint callback and a barrier",
                Verdict::Proven,
                &with(
                    KERAS,
                    "checkpoint = tf.keras.callbacks.ModelCheckpoint('best.h5')\nmodel.fit([[1.0]], [[1.0]], callbacks=[*([checkpoint] if hvd.rank() == 0 else [])])\nhvd.allreduce(0, name='read_barrier')\nmodel.load_weights('best.h5')\n",
                ),
            ),
            (
                "a read of another file",
                Verdict::Proven,
                &with(
                    HEADER,
                    "import numpy as np\nif hvd.rank() == 0:\n    np.save('weights.npy', [1.0])\nlabels = np.load('labels.npy')\n",
                ),
            ),
        ],
    );
}

/// The worst verdict of one invariant on `train.ipynb`, made of these code cells.
fn verdict_of_notebook(code: Code, cells: &[&str]) -> Verdict {
    let directory = tempfile::tempdir().unwrap();
    let notebook = serde_json::json!({
        "cells": cells.iter().map(|source| serde_json::json!({
            "cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": source,
        })).collect::<Vec<_>>(),
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    });
    std::fs::write(directory.path().join("train.ipynb"), notebook.to_string()).unwrap();
    let package = Package::load(directory.path(), &["train.ipynb".to_string()]);
    assert!(package.problems.is_empty(), "{:?}", package.problems);
    let analysis = Analysis::new(&package);
    let module = &analysis.modules[0];
    let program = Program {
        analysis: &analysis,
        module,
        text: &module.module.source.text,
        generated: Default::default(),
        origin: None,
        written_with_horovod: false,
        resolved_calls: Default::default(),
    };
    let invariant = ALL
        .iter()
        .find(|invariant| invariant.code() == code)
        .unwrap();
    invariant
        .check(&program)
        .iter()
        .map(|decision| decision.verdict)
        .max()
        .unwrap_or(Verdict::Proven)
}

#[test]
fn shell_lines_on_rank_zero_need_the_barrier_after_them() {
    let init = "import tensorflow as tf\nimport horovod.tensorflow.keras as hvd\nhvd.init()";
    let cases = [
        (
            "every rank",
            Verdict::Unknown,
            "!wget -q https://example.com/data.zip",
        ),
        (
            "rank 0, no barrier",
            Verdict::Unknown,
            "if hvd.rank() == 0:\n    !wget -q https://example.com/data.zip",
        ),
        (
            "rank 0, barrier later",
            Verdict::Unknown,
            "if hvd.rank() == 0:\n    !wget -q https://example.com/data.zip\nprint(1)\nhvd.allreduce(0, name='b')",
        ),
        (
            "rank 0 then a barrier",
            Verdict::Proven,
            "if hvd.rank() == 0:\n    !wget -q https://example.com/data.zip\nhvd.allreduce(0, name='b')",
        ),
        (
            "rank 0 then a barrier in a session of its own",
            Verdict::Proven,
            "if hvd.rank() == 0:\n    !wget -q https://example.com/data.zip\nwith tf.compat.v1.Session() as s:\n    s.run(hvd.allreduce(tf.constant(0), name='b'))",
        ),
        (
            "rank 0 then a block that may skip the barrier",
            Verdict::Unknown,
            "if hvd.rank() == 0:\n    !wget -q https://example.com/data.zip\nwith tf.compat.v1.Session() as s:\n    if s is None:\n        s.run(hvd.allreduce(tf.constant(0), name='b'))",
        ),
        ("writes nothing", Verdict::Proven, "!ls"),
    ];
    for (name, expected, cell) in cases {
        assert_eq!(
            verdict_of_notebook(RANK_ZERO_WRITES, &[init, cell]),
            expected,
            "{name}:\n{cell}"
        );
    }
}

#[test]
fn collectives_aligned() {
    let step = "    loss = sess.run(train_op)\n";
    assert_table(
        COLLECTIVES_ALIGNED,
        &[
            (
                "bounded loop",
                Verdict::Proven,
                &with(
                    HEADER,
                    &format!(
                        "x = tf.Variable(1.0)\nopt = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1))\ntrain_op = opt.minimize(x * x)\nsess = tf.Session()\nfor i in range(10):\n{step}"
                    ),
                ),
            ),
            (
                "a step gated on a batch the loop fills with random draws",
                Verdict::Unknown,
                &with(
                    HEADER,
                    "import numpy as np\nx = tf.Variable(1.0)\nopt = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1))\ntrain_op = opt.minimize(x * x)\nsess = tf.Session()\nbatch = []\nfor i in range(100):\n    if np.random.random() < 0.5:\n        batch.append(i)\n    if len(batch) >= 8:\n        sess.run(train_op)\n        batch = []\n",
                ),
            ),
            (
                "a model class's train op, run through an instance per environment step of an episode",
                Verdict::Violated,
                &with(
                    HEADER,
                    "class Net:\n    def __init__(self):\n        self.x = tf.Variable(1.0)\n        self.update_model = hvd.DistributedOptimizer(tf.train.AdamOptimizer(0.1)).minimize(self.x * self.x)\nnet = Net()\nsess = tf.Session()\nsess.run(hvd.broadcast_global_variables(0))\nfor episode in range(10):\n    j = 0\n    while j < 99:\n        j += 1\n        s1, r, d, _ = env.step(0)\n        sess.run(net.update_model)\n        if d:\n            break\n",
                ),
            ),
            (
                "a step gated on the episode counter the loop is bounded by",
                Verdict::Proven,
                &with(
                    HEADER,
                    "import numpy as np\nx = tf.Variable(1.0)\nopt = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1))\ntrain_op = opt.minimize(x * x)\nsess = tf.Session()\nepisodes = 0\nrewards = []\nwhile episodes < 100:\n    observation, reward, done, _ = env.step(np.random.randint(2))\n    rewards.append(reward)\n    if done:\n        episodes += 1\n        if episodes % 4 == 0:\n            sess.run(train_op)\n            rewards = []\n",
                ),
            ),
            (
                "a step gated on a batch filled without random draws",
                Verdict::Proven,
                &with(
                    HEADER,
                    "x = tf.Variable(1.0)\nopt = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1))\ntrain_op = opt.minimize(x * x)\nsess = tf.Session()\nbatch = []\nfor i in range(100):\n    batch.append(i)\n    if len(batch) >= 8:\n        sess.run(train_op)\n        batch = []\n",
                ),
            ),
            (
                "break on a local loss",
                Verdict::Violated,
                &with(
                    HEADER,
                    &format!(
                        "x = tf.Variable(1.0)\nopt = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1))\ntrain_op = opt.minimize(x * x)\nsess = tf.Session()\nfor i in range(10):\n{step}    if loss < 0.1:\n        break\n"
                    ),
                ),
            ),
            (
                "return from the training function on a local loss",
                Verdict::Violated,
                &with(
                    HEADER,
                    "x = tf.Variable(1.0)\nopt = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1))\ntrain_op = opt.minimize(x * x)\nsess = tf.Session()\ndef train():\n    for i in range(10):\n        loss = sess.run(train_op)\n        if loss < 0.1:\n            return i\ntrain()\n",
                ),
            ),
            (
                "a method running the train op once per step of an episode that ends on `done`",
                Verdict::Violated,
                &with(
                    HEADER,
                    "class Agent:\n    def __init__(self):\n        self.x = tf.Variable(1.0)\n        self.train_op = hvd.DistributedOptimizer(tf.train.AdamOptimizer(0.1)).minimize(self.x * self.x)\n    def update(self, sess):\n        sess.run([self.train_op])\nagent = Agent()\nsess = tf.Session()\nsess.run(hvd.broadcast_global_variables(0))\nfor episode in range(10):\n    while True:\n        state, reward, done, _ = env.step(0)\n        agent.update(sess)\n        if done:\n            break\n",
                ),
            ),
            (
                "steps over the transitions an episode collected until `done`",
                Verdict::Unknown,
                &with(
                    HEADER,
                    "class Agent:\n    def __init__(self):\n        self.x = tf.Variable(1.0)\n        self.train_op = hvd.DistributedOptimizer(tf.train.AdamOptimizer(0.1)).minimize(self.x * self.x)\n    def update(self, sess):\n        sess.run([self.train_op])\nagent = Agent()\nsess = tf.Session()\nsess.run(hvd.broadcast_global_variables(0))\nfor episode in range(10):\n    transitions = []\n    while True:\n        state, reward, done, _ = env.step(0)\n        transitions.append(state)\n        if done:\n            break\n    for t, transition in enumerate(transitions):\n        agent.update(sess)\n",
                ),
            ),
            (
                "steps over a fixed number of transitions after each episode",
                Verdict::Proven,
                &with(
                    HEADER,
                    "class Agent:\n    def __init__(self):\n        self.x = tf.Variable(1.0)\n        self.train_op = hvd.DistributedOptimizer(tf.train.AdamOptimizer(0.1)).minimize(self.x * self.x)\n    def update(self, sess):\n        sess.run([self.train_op])\nagent = Agent()\nsess = tf.Session()\nsess.run(hvd.broadcast_global_variables(0))\nfor episode in range(10):\n    transitions = []\n    while True:\n        state, reward, done, _ = env.step(0)\n        transitions.append(state)\n        if done:\n            break\n    for t in range(32):\n        agent.update(sess)\n",
                ),
            ),
            (
                "a collective in a function only rank 0 calls",
                Verdict::Violated,
                &with(
                    HEADER,
                    "def fetch():\n    hvd.allreduce(tf.constant(0), name='download_barrier')\nif hvd.rank() == 0:\n    fetch()\n",
                ),
            ),
            (
                "a broadcast only where a restore failed",
                Verdict::Unknown,
                &with(
                    HEADER,
                    &format!(
                        "x = tf.Variable(1.0)\nopt = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1))\ntrain_op = opt.minimize(x * x)\nsaver = tf.train.Saver()\nsess = tf.Session()\ntry:\n    saver.restore(sess, 'ckpt/model')\nexcept ValueError:\n    sess.run(tf.global_variables_initializer())\n    sess.run(hvd.broadcast_global_variables(0))\nfor i in range(10):\n{step}"
                    ),
                ),
            ),
            (
                "a broadcast after a restore-or-initialise",
                Verdict::Proven,
                &with(
                    HEADER,
                    &format!(
                        "x = tf.Variable(1.0)\nopt = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1))\ntrain_op = opt.minimize(x * x)\nsaver = tf.train.Saver()\nsess = tf.Session()\ntry:\n    saver.restore(sess, 'ckpt/model')\nexcept ValueError:\n    sess.run(tf.global_variables_initializer())\nsess.run(hvd.broadcast_global_variables(0))\nfor i in range(10):\n{step}"
                    ),
                ),
            ),
            (
                "break on an averaged loss",
                Verdict::Proven,
                &with(
                    HEADER,
                    &format!(
                        "x = tf.Variable(1.0)\nopt = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1))\ntrain_op = opt.minimize(x * x)\nsess = tf.Session()\nfor i in range(10):\n{step}    average = hvd.allreduce(loss)\n    if average < 0.1:\n        break\n"
                    ),
                ),
            ),
        ],
    );
}

#[test]
fn modular_offset_cursor() {
    let program = |offset: &str| {
        with(
            HEADER,
            &format!(
                "table = np.load('t.npy')\nweights = tf.Variable(tf.random.normal([5, 1]))\nopt = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1 * hvd.size()))\ntrain_op = opt.minimize(tf.reduce_sum(weights))\nsess = tf.Session()\nfor step in range(max(1, 80 // hvd.size())):\n    offset = {offset}\n    batch = table[offset:(offset + 32), :]\n    sess.run(train_op, feed_dict={{x: batch}})\n"
            ),
        )
    };
    assert_table(
        DATA_DIFFERS,
        &[
            (
                "the same offsets on every worker",
                Verdict::Unknown,
                &program("(step * 32) % (table.shape[0] - 32)"),
            ),
            (
                "offsets strided from the rank",
                Verdict::Proven,
                &program("((step * hvd.size() + hvd.rank()) * 32) % (table.shape[0] - 32)"),
            ),
        ],
    );
}

#[test]
fn schedule_step_count_passed_whole() {
    let schedule = "TOTAL = 1000\nschedule = tf.keras.optimizers.schedules.CosineDecay(0.1 * hvd.size(), max(1, TOTAL // hvd.size()))\nds = tf.data.Dataset.range(100).apply(equal_shard)\n";
    let helper = "def equal_shard(dataset):\n    count = tf.data.experimental.cardinality(dataset)\n    return dataset.shard(hvd.size(), hvd.rank()).take(count // hvd.size())\n";
    assert_table(
        RATE_FOLLOWS_SPLIT,
        &[
            (
                "a count divided for the schedule, shown whole",
                Verdict::Proven,
                &with(
                    HEADER,
                    &format!("{helper}{schedule}print('steps:', TOTAL)\n"),
                ),
            ),
            (
                "a count divided for the schedule, given whole to a ramp",
                Verdict::Unknown,
                &with(
                    HEADER,
                    &format!("{helper}{schedule}trainer = Trainer(total_steps=TOTAL)\n"),
                ),
            ),
        ],
    );
}

#[test]
fn api_exists_in_version() {
    assert_table(
        API_EXISTS,
        &[
            (
                "keras 2 api",
                Verdict::Proven,
                "import tensorflow as tf\nimport horovod.tensorflow.keras as hvd\nhvd.init()\ncb = hvd.callbacks.MetricAverageCallback()\n",
            ),
            (
                "callbacks of horovod.tensorflow",
                Verdict::Violated,
                &with(HEADER, "cb = hvd.callbacks.MetricAverageCallback()\n"),
            ),
            (
                "a model of TensorFlow's private Keras given tf.keras's optimizer",
                Verdict::Unknown,
                "import tensorflow as tf\nimport horovod.tensorflow.keras as hvd\nfrom tensorflow.python.keras.models import Sequential\nfrom tensorflow.python.keras.layers import Dense\nhvd.init()\nmodel = Sequential([Dense(1)])\nmodel.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.001)), loss='mse')\n",
            ),
            (
                "a model of TensorFlow 1's private Keras, which is tf.keras there",
                Verdict::Proven,
                "import tensorflow as tf\nimport horovod.tensorflow.keras as hvd\nfrom tensorflow.python.keras.models import Sequential\nfrom tensorflow.python.keras.layers import Dense\nhvd.init()\ntf.logging.set_verbosity(tf.logging.INFO)\nmodel = Sequential([Dense(1)])\nmodel.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.001)), loss='mse')\n",
            ),
            (
                "a TF1 optimizer in the Keras DistributedOptimizer",
                Verdict::Violated,
                &with(
                    KERAS,
                    "model.compile(optimizer=hvd.DistributedOptimizer(tf.train.AdamOptimizer(0.001)), loss='mse')\n",
                ),
            ),
            (
                "a TF1 optimizer bound to a name, then wrapped by the Keras DistributedOptimizer",
                Verdict::Violated,
                &with(
                    KERAS,
                    "optimizer = tf.train.RMSPropOptimizer(0.05)\noptimizer = hvd.DistributedOptimizer(optimizer)\nmodel.compile(optimizer, 'mse')\n",
                ),
            ),
            (
                "a Keras optimizer bound to a name, then wrapped by the Keras DistributedOptimizer",
                Verdict::Proven,
                &with(
                    KERAS,
                    "optimizer = tf.keras.optimizers.RMSprop(0.05)\noptimizer = hvd.DistributedOptimizer(optimizer)\nmodel.compile(optimizer, 'mse')\n",
                ),
            ),
            (
                "a Keras optimizer in the Keras DistributedOptimizer",
                Verdict::Proven,
                &with(
                    KERAS,
                    "model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.001)), loss='mse')\n",
                ),
            ),
            (
                "legacy optimizer in TF1",
                Verdict::Violated,
                &with(
                    HEADER,
                    "x = tf.placeholder(tf.float32)\nopt = tf.keras.optimizers.legacy.Adagrad(0.1)\n",
                ),
            ),
            (
                "keras 3",
                Verdict::Violated,
                "import keras\nimport horovod.tensorflow.keras as hvd\nhvd.init()\nmodel = keras.Sequential([keras.layers.Dense(1)])\n",
            ),
        ],
    );
}

#[test]
fn gpu_pinning_beside_a_multi_backend_keras_of_the_package() {
    let train = "import tensorflow as tf\nimport horovod.keras as hvd\nimport model\nhvd.init()\ngpus = tf.config.experimental.list_physical_devices('GPU')\n";
    let old_backend = "from keras import backend as K\ndef loop(body, count):\n    return K.control_flow_ops.while_loop(lambda i: i < count, body, [0])\n";
    let new_backend = "from keras import backend as K\ndef square(x):\n    return K.square(x)\n";
    assert_eq!(
        verdict_of(API_EXISTS, train, Some(("model.py", old_backend))),
        Verdict::Unknown,
        "a package module using `K.control_flow_ops` may run on TensorFlow 1, before `tf.config`"
    );
    assert_eq!(
        verdict_of(API_EXISTS, train, Some(("model.py", new_backend))),
        Verdict::Proven
    );
}

#[test]
fn only_training_rewritten() {
    let tape = "with tf.GradientTape() as tape:\n    loss = tf.reduce_sum(image)\ntape = hvd.DistributedGradientTape(tape)\ngrads = tape.gradient(loss, image)\n";
    assert_table(
        ONLY_TRAINING,
        &[
            (
                "tape feeding a step",
                Verdict::Proven,
                &with(
                    HEADER,
                    &format!(
                        "image = tf.Variable(tf.zeros((2, 2)))\nopt = tf.keras.optimizers.SGD(0.1)\n{tape}opt.apply_gradients([(grads, image)])\n"
                    ),
                ),
            ),
            (
                "gradients of an input",
                Verdict::Violated,
                &with(
                    HEADER,
                    &format!("image = tf.zeros((2, 2))\n{tape}print(grads)\n"),
                ),
            ),
        ],
    );
}

#[test]
fn device_per_worker() {
    assert_table(
        DEVICE_PINNED,
        &[
            (
                "tf2 pinning",
                Verdict::Proven,
                &with(
                    HEADER,
                    "gpus = tf.config.experimental.list_physical_devices('GPU')\nif gpus:\n    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')\n",
                ),
            ),
            (
                "session proto pinned",
                Verdict::Proven,
                &with(
                    HEADER,
                    "config = tf.ConfigProto()\nconfig.gpu_options.visible_device_list = str(hvd.local_rank())\nsess = tf.Session(config=config)\n",
                ),
            ),
            (
                "session proto not pinned",
                Verdict::Violated,
                &with(
                    HEADER,
                    "gpus = tf.config.experimental.list_physical_devices('GPU')\nif gpus:\n    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')\nconfig = tf.ConfigProto()\nsess = tf.Session(config=config)\n",
                ),
            ),
            (
                "config from elsewhere",
                Verdict::Unknown,
                &with(HEADER, "sess = tf.Session(config=make_config())\n"),
            ),
            (
                "nothing pinned",
                Verdict::Violated,
                &with(HEADER, "x = 1\n"),
            ),
        ],
    );
}

/// The checker without one invariant lets through what that invariant stops.
#[test]
fn a_checker_without_an_invariant_lets_its_defect_through() {
    let defect = with(
        HEADER,
        "gpus = tf.config.experimental.list_physical_devices('GPU')\nif gpus:\n    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')\nimport numpy as np\nnp.save('weights.npy', [1.0])\n",
    );
    let directory = tempfile::tempdir().unwrap();
    std::fs::write(directory.path().join("train.py"), &defect).unwrap();
    let package = Package::load(directory.path(), &["train.py".to_string()]);
    let analysis = Analysis::new(&package);
    let program = Program {
        analysis: &analysis,
        module: &analysis.modules[0],
        text: &analysis.modules[0].module.source.text,
        generated: Vec::new(),
        origin: None,
        written_with_horovod: false,
        resolved_calls: Default::default(),
    };
    let worst = |checker: Checker| {
        checker
            .check(&program)
            .iter()
            .map(|decision| decision.verdict)
            .max()
    };
    assert_eq!(worst(Checker::default()), Some(Verdict::Violated));
    assert!(worst(Checker::without(RANK_ZERO_WRITES)) < Some(Verdict::Violated));
}

/// Shapes found on real code after the first tables.
#[test]
fn real_code_shapes() {
    let divided = "for step in range(max(1, 100 // hvd.size())):\n";
    let cases: &[(Code, &str, Verdict, String)] = &[
        (
            GRADIENTS_AVERAGED,
            "two tapes sharing a name, both wrapped",
            Verdict::Proven,
            with(
                HEADER,
                "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nopt = tf.keras.optimizers.SGD(0.1)\ndef step(x):\n    with tf.GradientTape() as g:\n        a = tf.reduce_mean(model(x))\n    g = hvd.DistributedGradientTape(g)\n    ga = g.gradient(a, model.trainable_variables)\n    opt.apply_gradients(zip(ga, model.trainable_variables))\n    with tf.GradientTape() as g:\n        b = tf.reduce_mean(model(x))\n    g = hvd.DistributedGradientTape(g)\n    gb = g.gradient(b, model.trainable_variables)\n    opt.apply_gradients(zip(gb, model.trainable_variables))\n",
            ),
        ),
        (
            DATA_DIFFERS,
            "a TF1 producer that shuffles",
            Verdict::Proven,
            with(
                HEADER,
                &format!(
                    "queue = tf.train.slice_input_producer([tf.zeros((8, 2))], shuffle=True)\n{divided}    pass\n"
                ),
            ),
        ),
        (
            DATA_DIFFERS,
            "a global cursor, random elsewhere",
            Verdict::Unknown,
            with(
                HEADER,
                &format!(
                    "import random\ndata = list(range(1000))\ndata_index = 0\ndef next_batch(size):\n    global data_index\n    batch = data[data_index:data_index + size]\n    data_index += size\n    return batch, random.random()\n{divided}    next_batch(8)\n"
                ),
            ),
        ),
        (
            DATA_DIFFERS,
            "a global cursor advanced modulo the data, read by index",
            Verdict::Unknown,
            with(
                HEADER,
                &format!(
                    "import random\ndata = list(range(1000))\ndata_index = 0\ndef next_word():\n    global data_index\n    word = data[data_index]\n    data_index = (data_index + 1) % len(data)\n    return word, random.random()\n{divided}    next_word()\n"
                ),
            ),
        ),
        (
            DATA_DIFFERS,
            "a global cursor no divided loop calls, batches drawn at random",
            Verdict::Proven,
            with(
                HEADER,
                &format!(
                    "import numpy as np\ndata = list(range(1000))\ndata_index = 0\ndef next_word():\n    global data_index\n    word = data[data_index]\n    data_index = (data_index + 1) % len(data)\n    return word\n{divided}    batch = np.random.randint(0, 1000, 8)\nfor _ in range(3):\n    print(next_word())\n"
                ),
            ),
        ),
        (
            DATA_DIFFERS,
            "a global cursor and steps divided outside any loop",
            Verdict::Unknown,
            with(
                HEADER,
                "import numpy as np\ndata = list(range(1000))\ndata_index = 0\ndef batches():\n    global data_index\n    while True:\n        yield data[data_index:data_index + 8], np.random.rand()\n        data_index = (data_index + 8) % 992\nmodel.fit(batches(), steps_per_epoch=100 // hvd.size())\n",
            ),
        ),
        (
            DATA_DIFFERS,
            "a global counter only written at, batches drawn at random",
            Verdict::Proven,
            with(
                HEADER,
                &format!(
                    "import numpy as np\nx = np.random.rand(1000, 2)\nhistory = [0.0] * 100\ncalls = 0\ndef record(value):\n    global calls\n    history[calls] = value\n    calls += 1\n{divided}    batch = x[np.random.randint(0, 1000, 8)]\n    record(1.0)\n"
                ),
            ),
        ),
        (
            DATA_DIFFERS,
            "an offset computed from the step",
            Verdict::Unknown,
            with(
                HEADER,
                &format!(
                    "import numpy as np\nx = np.random.rand(1000, 2)\n{divided}    offset = (step * 16) % (1000 - 16)\n    batch = x[offset:offset + 16]\n"
                ),
            ),
        ),
        (
            WORK_SPLIT,
            "a shard cut by a take through reassigned names",
            Verdict::Unknown,
            with(
                HEADER,
                "def dataset():\n    ds = tf.data.Dataset.range(60000).shard(hvd.size(), hvd.rank())\n    ds = ds.map(lambda x: x)\n    ds = ds.take(20000).batch(100)\n    return ds\n",
            ),
        ),
        (
            RATE_FOLLOWS_SPLIT,
            "epochs of 1 divided by the worker count",
            Verdict::Violated,
            with(
                HEADER,
                "opt = tf.train.GradientDescentOptimizer(0.1 * hvd.size())\nepochs = 1\nrounds = max(1, epochs // hvd.size())\n",
            ),
        ),
        (
            RANK_ZERO_WRITES,
            "a helper of another module downloads",
            Verdict::Unknown,
            with(HEADER, "import helpers\nhelpers.load('data')\n"),
        ),
        (
            RANK_ZERO_WRITES,
            "input() on every rank",
            Verdict::Violated,
            with(HEADER, "answer = input('move? ')\n"),
        ),
        (
            DATA_DIFFERS,
            "a per-rank seed before a split",
            Verdict::Unknown,
            with(
                HEADER,
                &format!("import numpy as np\nnp.random.seed(7 + hvd.rank())\nindices = np.random.permutation(100)\nheld_out = indices[80:]\n{divided}    batch = np.random.randint(0, 80, 8)\n"),
            ),
        ),
        (
            DATA_DIFFERS,
            "a per-rank seed before words drawn only to show their neighbours",
            Verdict::Proven,
            with(
                HEADER,
                &format!("import numpy as np\nnp.random.seed(7 + hvd.rank())\nvalid_examples = np.random.choice(100, 16, replace=False)\n{divided}    batch = np.random.randint(0, 80, 8)\n"),
            ),
        ),
        (
            WORK_SPLIT,
            "a take(1) to look at a batch",
            Verdict::Proven,
            with(
                HEADER,
                "ds = tf.data.Dataset.range(100).shard(hvd.size(), hvd.rank()).batch(10)\nfor x in ds.take(1):\n    print(x)\n",
            ),
        ),
        (
            API_EXISTS,
            "standalone keras for a utility beside a tf.keras model",
            Verdict::Proven,
            "import keras\nimport tensorflow as tf\nimport horovod.tensorflow.keras as hvd\nhvd.init()\ny = keras.utils.to_categorical([1, 2])\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n".to_string(),
        ),
        (
            COLLECTIVES_ALIGNED,
            "a step count from a batch size drawn at random",
            Verdict::Unknown,
            with(
                HEADER,
                "import numpy as np\nx = tf.Variable(1.0)\ntrain_op = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1)).minimize(x * x)\nsess = tf.Session()\nfor trial in range(3):\n    batch_size = np.random.randint(1, 100)\n    n_batches = 1000 // batch_size\n    for step in range(n_batches):\n        sess.run(train_op)\n",
            ),
        ),
        (
            COLLECTIVES_ALIGNED,
            "a step count drawn at random once, then set again",
            Verdict::Proven,
            with(
                HEADER,
                "import numpy as np\nx = tf.Variable(1.0)\ntrain_op = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1)).minimize(x * x)\nsess = tf.Session()\nn_batches = np.random.randint(1, 100)\nprint(n_batches)\nn_batches = 50\nfor step in range(n_batches):\n    sess.run(train_op)\n",
            ),
        ),
        (
            COLLECTIVES_ALIGNED,
            "a while on the fetched global step",
            Verdict::Proven,
            with(
                HEADER,
                "x = tf.Variable(1.0)\nglobal_step = tf.train.get_or_create_global_step()\ntrain_op = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1)).minimize(x * x, global_step=global_step)\nsess = tf.Session()\nstep = 0\nwhile step < 100:\n    _, step = sess.run([train_op, global_step])\n",
            ),
        ),
    ];
    let graph = "x = tf.Variable(1.0)\ntrain_op = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1)).minimize(x * x)\n";
    let trains = "with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n    sess.run(hvd.broadcast_global_variables(0))\n    for step in range(max(1, 10 // hvd.size())):\n        sess.run(train_op)\n";
    let sessions: &[(&str, Verdict, String)] = &[
        (
            "a second session that only evaluates",
            Verdict::Proven,
            with(
                HEADER,
                &format!("{graph}{trains}with tf.Session() as check:\n    print(check.run(x))\n"),
            ),
        ),
        (
            "a second session that trains without a broadcast",
            Verdict::Unknown,
            with(
                HEADER,
                &format!(
                    "{graph}{trains}with tf.Session() as again:\n    again.run(tf.global_variables_initializer())\n    again.run(train_op)\n"
                ),
            ),
        ),
    ];
    for (name, expected, source) in sessions {
        assert_eq!(
            verdict_of(STATE_BROADCAST, source, None),
            *expected,
            "DST303 {name}:\n{source}"
        );
    }
    let helpers = "import urllib.request\ndef fetch(url):\n    urllib.request.urlretrieve(url, 'data.zip')\ndef load(path):\n    fetch('http://example.invalid/' + path)\n";
    for (code, name, expected, source) in cases {
        let other = (*code == RANK_ZERO_WRITES).then_some(("helpers.py", helpers));
        let verdict = verdict_of(*code, source, other);
        assert_eq!(verdict, *expected, "{} {name}:\n{source}", code.id());
    }
}
