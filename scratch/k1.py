import numpy as np, rbdiff as rbd, sys, time, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, "scratch")
from proto import reference
rng = np.random.default_rng(1)
model = rbd.load_robot("solo12", floating_base=True)
for ref in ["local", "local_world_aligned"]:
    cs = tuple(rbd.Contact(f, "3d", reference=ref, gains=(10.0, 2.0)) for f in ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"])
    q = rbd.random_configuration(model, rng)
    v, tau, la = rng.normal(size=(3, model.nv))
    lf = rng.normal(size=12)
    t = time.time()
    P = rbd.contact_dynamics_contraction(model, q, v, tau, cs, la, lf)
    print("call", time.time() - t)
    Rf = reference(model, q, v, tau, cs, la, lf)
    for nm, a, b in zip(["qq", "vv", "qv", "tq"], P, Rf):
        print(ref, nm, np.abs(a - b).max() / np.abs(b).max())
