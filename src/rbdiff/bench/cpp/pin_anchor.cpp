// Timing anchor: Pinocchio's C++ derivatives, called from C++ (no Python in the loop).
// Usage: pin_anchor MODEL_BIN SEED REPEATS [DUMP_PATH]
// MODEL_BIN: a pinocchio.Model saved from Python with model.saveToBinary(path), so the
// C++ side times exactly the model the Python side built (and needs no URDF headers).
// Prints one JSON object: median seconds per call of each timed algorithm. With
// DUMP_PATH, also writes q, v, a and the four second-order tensors (raw float64,
// Pinocchio's Tensor layout) so a test can compare them with rbdiff's.
#include <pinocchio/multibody.hpp>
#include <pinocchio/algorithm/aba-derivatives.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/algorithm/rnea-derivatives.hpp>
#include <pinocchio/algorithm/rnea-second-order-derivatives.hpp>
#include <pinocchio/serialization.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace pinocchio;

template <typename F> double median_seconds(F f, int repeats) {
  // Each sample times a block of calls long enough to dwarf the clock's resolution.
  int inner = 1;
  for (;;) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) f();
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (dt > 2e-3) break;
    inner *= 2;
  }
  std::vector<double> s;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) f();
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / inner);
  }
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

static void dump(std::ofstream & out, const double * p, long n) {
  out.write(reinterpret_cast<const char *>(p), n * sizeof(double));
}

int main(int argc, char ** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MODEL_BIN SEED REPEATS [DUMP_PATH]\n", argv[0]);
    return 2;
  }
  Model model;
  model.loadFromBinary(argv[1]);
  Data data(model);
  std::mt19937 gen(std::atoi(argv[2]));
  std::normal_distribution<double> nd;
  Eigen::VectorXd dq(model.nv), v(model.nv), a(model.nv);
  for (int i = 0; i < model.nv; ++i) { dq[i] = nd(gen); v[i] = nd(gen); a[i] = nd(gen); }
  Eigen::VectorXd q = integrate(model, neutral(model), dq);
  Eigen::VectorXd tau = rnea(model, data, q, v, a);
  int repeats = std::atoi(argv[3]);

  double so = median_seconds([&] { ComputeRNEASecondOrderDerivatives(model, data, q, v, a); }, repeats);
  double id1 = median_seconds([&] { computeRNEADerivatives(model, data, q, v, a); }, repeats);
  double fd1 = median_seconds([&] { computeABADerivatives(model, data, q, v, tau); }, repeats);
  std::printf("{\"nq\": %d, \"nv\": %d, \"rnea_second_order_derivatives\": %.9g, "
              "\"rnea_derivatives\": %.9g, \"aba_derivatives\": %.9g}\n",
              int(model.nq), int(model.nv), so, id1, fd1);

  if (argc > 4) {
    ComputeRNEASecondOrderDerivatives(model, data, q, v, a);
    std::ofstream out(argv[4], std::ios::binary);
    long n3 = long(model.nv) * model.nv * model.nv;
    dump(out, q.data(), model.nq);
    dump(out, v.data(), model.nv);
    dump(out, a.data(), model.nv);
    dump(out, data.d2tau_dqdq.data(), n3);
    dump(out, data.d2tau_dvdv.data(), n3);
    dump(out, data.d2tau_dqdv.data(), n3);
    dump(out, data.d2tau_dadq.data(), n3);
  }
  return 0;
}
