"""The fit loop, shared by every experiment script."""
import time


def train(model, train_ds, val_ds, cfg):
    start = time.time()
    history = model.fit(
        train_ds,
        epochs=cfg.epochs,
        steps_per_epoch=cfg.steps_per_epoch,
        validation_data=val_ds,
        validation_steps=cfg.validation_steps,
        verbose=2,
    )
    print("training took %.1f s" % (time.time() - start))
    return history
