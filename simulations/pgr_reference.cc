/* The reference harness for simulations/bench_projective.py (section pgr_decode): times the decoder of Feldman,
 * Nelson, Nguyen and Talwar's C++ (github.com/minilek/private_frequency_oracles, checked at f043e0c) on reports
 * that ldp's encoder made, and prints its estimates so that the benchmark can compare them with ldp's.
 *
 * Not part of the package and not vendored: the benchmark compiles this file together with the authors' own
 * sources (oracles/*.cc, oracles/util/*.cc of a checkout named by LDP_PGR_REFERENCE), once per flag set.
 *
 * Usage: pgr_reference ROUNDS < input
 *   input:  a line "pg d eps q" or "hpg d eps h q", a line n, then the n reported indices, one a line.
 *   output: one line of JSON:
 *     seconds            best of ROUNDS timed calls of estimate_all_freqs(messages), the authors' entry point
 *                        and what their run_experiment.cc times (it builds the histogram from the messages, then
 *                        runs the hyperplane counts: the dynamic programme for t >= 4, the direct sum for t <= 3);
 *     runs               every timed call, in seconds;
 *     histogram_seconds  best of ROUNDS timed calls of dp_bottom_up(y), the hyperplane counts alone, y the
 *                        histogram built outside the clock (PGR with t >= 4 only; null otherwise; the affine map
 *                        to estimates, K multiply-adds, left out): the part comparable with a decode from an
 *                        already folded histogram;
 *     estimates          the estimates of the first d values.
 * One untimed call precedes the timed ones (page faults, caches). */

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "oracles/hybrid_projective_geometry.h"
#include "oracles/projective_geometry.h"

using namespace std;

namespace {

using Clock = chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return chrono::duration<double>(Clock::now() - start).count();
}

/* The best time of `rounds` calls of `call` after one untimed call; each time appended to `runs` if given. */
template <typename F>
double best_of(int rounds, F call, vector<double> *runs) {
  call();
  double best = 1e300;
  for (int r = 0; r < rounds; ++r) {
    Clock::time_point start = Clock::now();
    call();
    double s = seconds_since(start);
    if (runs) runs->push_back(s);
    best = min(best, s);
  }
  return best;
}

void print_json(double seconds, const vector<double> &runs, double histogram_seconds,
                const vector<double> &estimates, int d) {
  printf("{\"seconds\": %.9g, \"runs\": [", seconds);
  for (size_t i = 0; i < runs.size(); ++i) printf("%s%.9g", i ? ", " : "", runs[i]);
  if (histogram_seconds < 0) printf("], \"histogram_seconds\": null, \"estimates\": [");
  else printf("], \"histogram_seconds\": %.9g, \"estimates\": [", histogram_seconds);
  for (int i = 0; i < d; ++i) printf("%s%.17g", i ? ", " : "", estimates[i]);
  printf("]}\n");
}

}  // namespace

int main(int argc, char **argv) {
  int rounds = argc > 1 ? stoi(argv[1]) : 5;
  string kind;
  int d, q, h = 1;
  double eps;
  long n;
  cin >> kind >> d >> eps;
  if (kind == "hpg") cin >> h;
  cin >> q >> n;
  if (!cin || (kind != "pg" && kind != "hpg") || rounds < 1) {
    fprintf(stderr, "usage: pgr_reference ROUNDS < 'pg d eps q' or 'hpg d eps h q', n, n indices\n");
    return 2;
  }
  vector<Message> messages;
  messages.reserve(n);
  for (long i = 0, j; i < n && cin >> j; ++i) messages.emplace_back(static_cast<int>(j));

  unique_ptr<PrivateFrequencyOracle> oracle;
  ProjectiveGeometryResponse *pg = nullptr;
  if (kind == "pg") {
    pg = new ProjectiveGeometryResponse(d, eps, q);
    oracle.reset(pg);
  } else {
    oracle.reset(new HybridProjectiveGeometryResponse(d, eps, h, q));
  }
  vector<double> estimates, runs;
  double seconds = best_of(rounds, [&] { estimates = oracle->estimate_all_freqs(messages); }, &runs);

  double histogram_seconds = -1;
  if (pg && pg->get_t() >= 4) {
    vector<int> y(oracle->universe_size());
    for (Message &m : messages) y[m.read()]++;
    vector<int> counts;
    histogram_seconds = best_of(rounds, [&] {
      counts = pg->dp_bottom_up(y);
    }, nullptr);
  }
  print_json(seconds, runs, histogram_seconds, estimates, d);
  return 0;
}
