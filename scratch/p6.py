import numpy as np, rbdiff as rbd, sys
sys.path.insert(0, "scratch")
from proto import proto, reference
rng = np.random.default_rng(2)
model = rbd.load_robot("talos_full_v2", floating_base=True)
print(model.nv)
for ref in ["local", "local_world_aligned"]:
    cs = tuple(rbd.Contact(f, "6d", reference=ref, gains=(0.0, 2.0)) for f in ["left_sole_link", "right_sole_link"])
    q = rbd.random_configuration(model, rng)
    v, tau, la = rng.normal(size=(3, model.nv))
    lf = rng.normal(size=12)
    P = proto(model, q, v, tau, cs, la, lf, damping=0.01 if ref == "local" else 0.0)
    Rf = reference(model, q, v, tau, cs, la, lf, damping=0.01 if ref == "local" else 0.0)
    for nm, a, b in zip(["qq", "vv", "qv", "tq"], P, Rf):
        print(ref, nm, np.abs(a - b).max() / np.abs(b).max())
