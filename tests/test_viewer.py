"""rbdiff.viewer: the robot drawn where forward kinematics puts it, in a real headless
Chromium (the system's; WebGL on SwiftShader), played trajectories, the exported HTML,
the GIF, and bad input. Geometry loading (URDF visuals, MJCF geoms, package paths,
missing meshes) needs no browser."""

import io
import warnings

import numpy as np
import pytest

import rbdiff as rbd

viser = pytest.importorskip("viser", reason="rbdiff.viewer needs viser: pip install "
                            "'rbdiff[viewer]'")
pytest.importorskip("trimesh", reason="rbdiff.viewer needs trimesh: pip install "
                    "'rbdiff[viewer]'")

from rbdiff.viewer import Camera, Viewer                    # noqa: E402
from rbdiff.viewer.browser import HeadlessPage, find_browser  # noqa: E402
from rbdiff.viewer.geometry import model_parts, resolve_mesh  # noqa: E402
from PIL import Image                                         # noqa: E402

ORANGE = (255, 100, 0)
W, H = 320, 240


def _have_playwright():
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False
    return True


def _erd_robot(name):
    try:
        return rbd.load_robot(name)
    except ImportError as e:
        pytest.skip(f"example-robot-data is not installed: {e}")


def _orange(img):
    """Mask of the robot's pixels: orange under any shading (red well above blue and
    above green), never the white background or grey grid."""
    r, g, b = (img[..., k].astype(int) for k in range(3))
    return (r > 60) & (r - b > 50) & (r - g > 25)


def _configurations(model):
    """Two configurations far enough apart to move the robot across the image."""
    q1 = rbd.neutral(model)
    q2 = q1.copy()
    if model.joint_types[1] == 4:           # free flyer: move and tilt the base
        q1[2] = q2[2] = 0.35
        q2[0] += 0.2
        q2[7:] = np.tile([0.0, 0.8, -1.6], (model.nq - 7) // 3)
    else:
        q2[:] = np.clip(0.9 * np.array([1, -1, 1, -1, 1, -1, 1][:model.nq] +
                                       [0] * max(0, model.nq - 7)),
                        model.lower_limits, model.upper_limits)
    return q1, q2


def _points(model, viewer_frames, q):
    """World positions of the frames that carry the robot's geometry."""
    return np.asarray(rbd.frame_placements(model, q))[viewer_frames, :3, 3]


@pytest.fixture(scope="module")
def page():
    """One headless Chromium for the module (each launch costs seconds)."""
    if find_browser() is None or not _have_playwright():
        pytest.skip("no headless browser: install Chromium (apt-get install chromium; "
                    ".ci/run does) and playwright (the viewer extra)")
    p = HeadlessPage("about:blank", 640, 480)
    yield p
    p.close()


@pytest.fixture(scope="module", params=["iiwa14", "solo12"])
def viewer(request, page):
    model = rbd.load_robot("iiwa14") if request.param == "iiwa14" else \
        _erd_robot(request.param)
    v = Viewer(model, color=ORANGE, ground=False, fast=True, browser=page)
    yield v
    v.close()


def test_geometry_needs_no_browser():
    iiwa = rbd.load_robot("iiwa14")
    assert iiwa.visuals == ()                # capsules between its joints instead
    parts = model_parts(iiwa)
    assert {p.frame for p in parts} >= {iiwa.get_frame_id(n, "JOINT") for n in iiwa.names[1:]}
    solo = _erd_robot("solo12")
    assert len(solo.visuals) == 17 and all(v.shape == "mesh" for v in solo.visuals)
    for vis in solo.visuals:                  # package:// resolved in example-robot-data
        assert resolve_mesh(vis.filename, vis.base_dir).is_file(), vis.filename
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # every mesh loads: no "drawn as a box"
        assert len(model_parts(solo)) == 17
    talos = _erd_robot("talos_legs")          # a loader-edited model keeps its links' visuals
    assert talos.visuals and all(talos.frames[v.frame].type == rbd.FrameType.BODY
                                 for v in talos.visuals)
    red = solo.reduced(["FL_KFE"])
    assert [v.name for v in red.visuals] == [v.name for v in solo.visuals]


def test_mjcf_geoms():
    pytest.importorskip("mujoco", reason="MJCF needs mujoco (rbdiff[mujoco])")
    xml = """<mujoco><asset><mesh name="tet" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/></asset>
      <worldbody><geom type="plane" size="0 0 .1"/>
        <body pos="0 0 1"><joint type="hinge"/>
          <geom type="mesh" mesh="tet" rgba="1 0 0 1"/>
          <geom type="capsule" size=".1 .2" group="3"/>
          <geom name="b" type="box" size=".1 .2 .3" pos="1 0 0"/></body>
      </worldbody></mujoco>"""
    m = rbd.load_mjcf(xml)
    shapes = {v.name: (v.shape, v.size, m.frames[v.frame].name) for v in m.visuals}
    assert shapes["b"] == ("box", (0.2, 0.4, 0.6), "body1")   # full lengths
    assert shapes["geom0"][0] == "box"        # the infinite plane: a thin 20 m box
    assert "geom2" not in shapes              # group 3 (collision): hidden, as MuJoCo's
    mesh = next(v for v in m.visuals if v.shape == "mesh")
    assert mesh.vertices.shape == (4, 3) and mesh.faces.shape == (4, 3)
    assert mesh.rgba == (1.0, 0.0, 0.0, 1.0)
    assert len(model_parts(m)) == 3


def test_missing_and_unreadable_mesh_drawn_as_box(tmp_path):
    bad = tmp_path / "broken.stl"
    bad.write_bytes(b"not a mesh at all")
    urdf = """<robot name="r"><link name="base"><visual><geometry>
        <mesh filename="package://nowhere/meshes/gone.stl"/></geometry></visual></link>
      <link name="arm"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1"
        iyz="0" izz="1"/></inertial><visual><geometry><mesh filename="broken.stl"/>
        </geometry></visual>
        <visual><geometry><cylinder radius="0.1" length="0.5"/></geometry>
        <material name="red"/></visual></link>
      <material name="red"><color rgba="1 0 0 1"/></material>
      <joint name="j" type="revolute"><parent link="base"/><child link="arm"/>
        <limit lower="-1" upper="1"/></joint></robot>"""
    path = tmp_path / "r.urdf"
    path.write_text(urdf)
    model = rbd.load_urdf(path)
    assert model.visuals[2].rgba == (1.0, 0.0, 0.0, 1.0)     # a robot-level material
    with pytest.warns(UserWarning) as rec:
        parts = model_parts(model)
    msgs = [str(w.message) for w in rec]
    assert any("gone.stl" in m and "missing" in m and "box" in m for m in msgs), msgs
    assert any(str(bad) in m and "unreadable" in m for m in msgs), msgs
    assert [len(p.vertices) for p in parts[:2]] == [8, 8]        # boxes


def test_bad_input():
    model = rbd.load_robot("iiwa14")
    with Viewer(model, ground=False, fast=True) as v:
        with pytest.raises(ValueError, match=r"\(T, nq\) = \(T, 7\).*\(5, 6\)"):
            v.play(np.zeros((5, 6)), 0.1)
        with pytest.raises(ValueError, match=r"14 columns: pass xs\[:, :7\]"):
            v.export_html("never.html", np.zeros((5, 14)), 0.1)
        with pytest.raises(ValueError, match="dt"):
            v.play(np.zeros((5, 7)), 0.0)
        with pytest.raises(ValueError, match="7 finite values"):
            v.display(np.full(7, np.nan))
        with pytest.raises(KeyError, match="no frame named"):
            v.show_frames(["nope"])
        with pytest.raises(ValueError, match=r"forces: expected shape \(1, 3\)"):
            v.show_contacts(["iiwa_link_ee"], np.zeros((2, 3)))


def test_frames_com_contacts():
    model = rbd.load_robot("iiwa14")
    q = rbd.neutral(model) + 0.3
    with Viewer(model, ground=False, fast=True) as v:
        v.display(q)
        v.show_frames(["iiwa_link_ee"])
        v.show_com()
        v.show_contacts(["iiwa_link_ee"], [[0.0, 0.0, 50.0]])
        k = model.get_frame_id("iiwa_link_ee")
        oMf = np.asarray(rbd.frame_placements(model, q))
        np.testing.assert_allclose(v._axes[k].position, oMf[k, :3, 3])
        np.testing.assert_allclose(v._com.position, rbd.center_of_mass(model, q))
        np.testing.assert_allclose(v._contact_nodes[0].position, oMf[k, :3, 3])
        assert v._arrows is not None
        v.show_contacts(())
        assert v._arrows is None and not v._contact_nodes[0].visible


def test_robot_drawn_where_kinematics_puts_it(viewer):
    model = viewer.model
    q1, q2 = _configurations(model)
    cam = viewer.fit_camera(np.stack([q1, q2]))
    centroids = []
    for q in (q1, q2):
        viewer.display(q)
        mask = _orange(viewer.screenshot(W, H, cam))
        assert mask.sum() > 400, "the robot is not drawn"
        uv, depth = cam.project(_points(model, viewer._frames, q), W, H)
        assert np.all(depth > 0)
        # every frame that carries geometry projects onto (or next to) robot pixels
        near = [mask[max(0, int(y) - 4):int(y) + 5, max(0, int(x) - 4):int(x) + 5].any()
                for x, y in uv]
        assert np.mean(near) >= 0.9, (uv, near)
        # and the robot's pixels stay in the projected frames' box (with the links' width)
        ys, xs = np.nonzero(mask)
        lo, hi = uv.min(axis=0) - 45, uv.max(axis=0) + 45
        inside = (xs >= lo[0]) & (xs <= hi[0]) & (ys >= lo[1]) & (ys <= hi[1])
        assert inside.mean() > 0.97
        centroids.append((np.array([xs.mean(), ys.mean()]), uv.mean(axis=0)))
    # a configuration change moves the pixels as forward kinematics moves the frames
    moved, predicted = centroids[1][0] - centroids[0][0], centroids[1][1] - centroids[0][1]
    assert np.linalg.norm(moved) > 10
    assert np.dot(moved, predicted) / (np.linalg.norm(moved) * np.linalg.norm(predicted)) > 0.8


def test_play_reaches_last_frame(viewer):
    model = viewer.model
    q1, q2 = _configurations(model)
    qs = np.linspace(q1, q2, 5)
    if model.joint_types[1] == 4:
        qs[:, 3:7] = q1[3:7]                  # unit quaternions stay unit
    cam = viewer.fit_camera(qs)
    viewer.play(qs, 0.02)
    assert viewer.frame_index == len(qs) - 1
    assert viewer._gui[0].value == len(qs) - 1     # the page's time slider followed
    end = _orange(viewer.screenshot(W, H, cam))
    viewer.display(qs[-1])
    np.testing.assert_array_equal(end, _orange(viewer.screenshot(W, H, cam)))
    viewer.display(qs[0])
    assert (end != _orange(viewer.screenshot(W, H, cam))).sum() > 100


def test_exported_html_plays_offline(tmp_path, page):
    model = rbd.load_robot("iiwa14")
    q1, q2 = _configurations(model)
    qs = np.linspace(q1, q2, 4)
    with Viewer(model, color=ORANGE, ground=False, fast=True) as v:
        cam = v.fit_camera(qs)
        path = v.export_html(tmp_path / "iiwa.html", qs, 0.5)
    html = path.read_text()
    assert "__VISER_EMBED_DATA__" in html and 'src="http' not in html
    c = cam
    url = (path.as_uri() + "?initialCameraPosition=" + ",".join(map(str, c.position))
           + "&initialCameraLookAt=" + ",".join(map(str, c.look_at)))
    def shot(p):
        p.wait_for_timeout(300)
        return p.screenshot()

    # a file URL: no server; the page needs nothing from the network
    page.call(lambda p: (p.goto(url), p.wait_for_selector("canvas", timeout=60000)))
    imgs = [np.asarray(Image.open(io.BytesIO(page.call(shot))).convert("RGB"))
            for _ in range(5)]
    masks = [_orange(i) for i in imgs]
    assert all(m.sum() > 200 for m in masks[1:]), [m.sum() for m in masks]
    # it plays: the robot's pixels change from one screenshot to the next
    assert len({m.tobytes() for m in masks[1:]}) >= 2


def test_render_gif(tmp_path, viewer):
    q1, q2 = _configurations(viewer.model)
    path = viewer.render_gif(tmp_path / "a.gif", np.stack([q1, q2, q1]), 0.1, width=160,
                             height=120)
    with Image.open(path) as im:
        assert im.n_frames == 3 and im.size == (160, 120)
        assert im.info["duration"] == 100          # ms: real time


def test_result_contact_forces_played():
    """A trajopt Result with its Problem: each knot's forces become world-frame arrows on
    its contact frames ("local" forces rotated by the frame, world-aligned ones as they
    are), NaN off contact; xs (T+1, nq+nv) gives the configurations."""
    from types import SimpleNamespace

    model = rbd.load_robot("iiwa14")
    nq = model.nq
    ee, local = rbd.Contact("iiwa_link_ee"), rbd.Contact("iiwa_link_7",
                                                         reference="local_world_aligned")
    prob = SimpleNamespace(dt=0.01, knot_contacts=[(ee, local), (local,), ()])
    xs = np.zeros((4, 2 * nq))
    xs[:, :nq] = np.linspace(0.0, 0.5, 4)[:, None]
    forces = np.array([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [7.0, 8.0, 9.0, 0, 0, 0],
                       np.zeros(6)])
    res = SimpleNamespace(xs=xs, forces=forces)
    with Viewer(model, ground=False, fast=True) as v:
        v.play(res, problem=prob)
        tr = v._traj[0]
        k_ee, k7 = model.get_frame_id("iiwa_link_ee"), model.get_frame_id("iiwa_link_7")
        assert tr.contact_frames == (k_ee, k7) and tr.forces.shape == (4, 2, 3)
        R = np.asarray(rbd.frame_placement(model, xs[0, :nq], k_ee))[:3, :3]
        np.testing.assert_allclose(tr.forces[0, 0], R @ [1.0, 2.0, 3.0])
        np.testing.assert_allclose(tr.forces[0, 1], [4.0, 5.0, 6.0])
        np.testing.assert_allclose(tr.forces[1, 1], [7.0, 8.0, 9.0])
        assert np.isnan(tr.forces[1, 0]).all() and np.isnan(tr.forces[2:]).all()
        assert v.frame_index == 3 and v._arrows is None     # no contact at the last knot
        with pytest.raises(ValueError, match="dt or problem="):
            v.play(res)


def _in_view(cam, points, width=W, height=H):
    """Whether every point is in front of ``cam`` and inside its width x height image."""
    uv, depth = cam.project(points, width, height)
    return bool(np.all(depth > 0) and np.all((uv >= 0) & (uv <= [width, height])))


def test_fit_camera_geometry():
    """The fitted camera looks at the points' bounding-box centre from the front right
    (+x, -y: y is left), slightly above, and sees every point."""
    from rbdiff.viewer.geometry import fit_camera

    pts = np.random.default_rng(0).uniform(-0.3, 0.3, size=(50, 3)) + [1.0, 2.0, 5.0]
    cam = fit_camera(pts)
    np.testing.assert_allclose(cam.look_at, 0.5 * (pts.min(0) + pts.max(0)))
    d = np.subtract(cam.position, cam.look_at)
    assert d[0] > 0 and d[1] < 0 and 0 < d[2] < min(d[0], -d[1])
    assert _in_view(cam, pts)


def test_camera_fits_the_shown_configuration():
    """Without a camera given, display(q) refits it to q: a floating base shown 5 m up
    is looked at there, not at the neutral configuration's origin; a given camera stays."""
    inertial = ('<inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" '
                'iyy="0.01" iyz="0" izz="0.01"/></inertial>')
    model = rbd.load_urdf(
        f'<robot name="r"><link name="base">{inertial}</link><link name="leg">{inertial}'
        '</link><joint name="hip" type="continuous"><parent link="base"/><child '
        'link="leg"/><origin xyz="0 0 -0.3"/><axis xyz="0 1 0"/></joint></robot>',
        floating_base=True)
    q = rbd.neutral(model)
    q[2] = 5.0
    pts = np.asarray(rbd.frame_placements(model, q))[1:, :3, 3]
    with Viewer(model, ground=False, fast=True) as v:
        assert abs(v.camera.look_at[2]) < 1.0      # fitted to the neutral one first
        v.display(q)
        assert v.camera.look_at[2] == pytest.approx(0.5 * (pts[:, 2].min() + pts[:, 2].max()))
        assert v.camera.look_at[2] > 4.5 and _in_view(v.camera, pts)
        v.show_com()                                # redraws: the camera stays
        assert v.camera.look_at[2] > 4.5
        np.testing.assert_allclose(v.server.initial_camera.look_at, v.camera.look_at)
    fixed = Camera((3.0, -3.0, 2.0), (0.0, 0.0, 0.0))
    with Viewer(model, ground=False, fast=True, camera=fixed) as v:
        v.display(q)
        assert v.camera is fixed


def test_camera_sees_a_standing_go2():
    """go2 displayed in its "standing" configuration (base 0.335 m up, not its neutral
    one) is in view whole."""
    model = _erd_robot("go2")
    q = model.reference_configurations["standing"]
    with Viewer(model, ground=False, fast=True) as v:
        v.display(q)
        assert _in_view(v.camera, np.asarray(rbd.frame_placements(model, q))[:, :3, 3])
