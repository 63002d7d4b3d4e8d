import os


def _write(path, text):
    with open(path, "w") as out:
        out.write(text)


def save_text(path, text):
    _write(path, text)


def make_dir(path):
    if not os.path.exists(path):
        os.makedirs(path)
