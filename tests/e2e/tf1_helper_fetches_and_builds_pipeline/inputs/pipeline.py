"""Fetch the rows once (the archive is unpacked, then deleted), and build
the graph's input pipeline from them."""
import gzip
import os
import shutil
import urllib.request

import numpy as np
import tensorflow.compat.v1 as tf


def fetch_rows(url, folder):
    try:
        os.mkdir(folder)
    except OSError:
        pass
    archive = os.path.join(folder, "rows.csv.gz")
    if os.path.exists(archive) or os.path.exists(archive[:-3]):
        print("found", archive[:-3])
    else:
        urllib.request.urlretrieve(url, archive)
        with gzip.open(archive, "rb") as packed, open(archive[:-3], "wb") as unpacked:
            shutil.copyfileobj(packed, unpacked)
        os.remove(archive)
    return archive[:-3]


def training_pipeline(url, folder, batch_size):
    table = np.loadtxt(fetch_rows(url, folder), delimiter=",", dtype=np.float32)
    data = tf.data.Dataset.from_tensor_slices((table[:, :3], table[:, 3:]))
    return data.batch(batch_size)
