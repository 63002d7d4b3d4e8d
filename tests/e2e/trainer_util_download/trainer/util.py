"""Fetching the dataset: download the archive once, unpack it once."""
import os
import tarfile
import urllib.request


def maybe_download_and_extract(url, data_dir):
    if not os.path.exists(data_dir):
        os.makedirs(data_dir)
    archive = os.path.join(data_dir, os.path.basename(url))
    if not os.path.exists(archive):
        urllib.request.urlretrieve(url, archive)
    extracted = os.path.join(data_dir, "points")
    if not os.path.exists(extracted):
        with tarfile.open(archive) as tar:
            tar.extractall(data_dir)
    return extracted
