//! What is specific to `pgr` and `hpg`: the numbering of the points of `PG(t−1, q)`, the bijection of `[0, P_{t−1})`
//! onto a hyperplane, the own set of a value in its block, and the layout Python resolves when `q` (or `blocks`) is
//! left out, on a grid of (ε, d) with the variance of each choice to the last bit (ε up to 40: every prime a
//! candidate from ε ≈ 10.4; and ε so large or so small, 1e-300 to 1e300, that no candidate's variance is finite),
//! Python's variances of other layouts and points of large hyperplanes, and Python's answer to parameters the vector
//! files do not exercise, among them the refusals of parameters left without a feasible layout and of an ε no layout
//! can realize (`conformance/layouts/projective.json`, written by `conformance/layout_vectors.py`; the TypeScript and
//! Kotlin clients check the same file).

mod common;

use std::any::Any;
use std::collections::BTreeSet;
use std::sync::Arc;

use common::{close_ulps, f, same_json};
use ldp_client::protocols::projective_geometry::ProjectiveParams;
use ldp_client::protocols::projective_layout::{
    best_hpg_layout, best_pgr_field, decode_work, dimension, field_candidates, hpg_layouts, least_excess, pgr_layouts,
    rare_variance, LeastExcess, MAX_DECODE_WORK,
};
use ldp_client::protocols::projective_space::{
    hyperplane_point, is_prime, point_index, point_vector, points, primes, MAX_FIELD,
};
use ldp_client::{json, protocols, Error, ProtocolParams, Value};

/// Small spaces: (q, t) with `P_t` at most a few thousand.
const SPACES: &[(u64, usize)] =
    &[(2, 1), (2, 2), (2, 3), (2, 5), (3, 2), (3, 3), (3, 4), (5, 2), (5, 3), (7, 3), (11, 2)];

fn fixture() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/layouts/projective.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("conformance/layouts/projective.json"))
        .expect("its JSON")
}

fn dot(u: &[u64], v: &[u64], q: u64) -> u64 {
    u.iter().zip(v).fold(0, |acc, (a, b)| (acc + a * b) % q)
}

fn is_canonical(v: &[u64], q: u64) -> bool {
    v.iter().all(|&c| c < q) && v.iter().find(|&&c| c != 0) == Some(&1)
}

#[test]
fn points_are_numbered_rightmost_leading_one_first_and_round_trip() {
    for &(q, t) in SPACES {
        let n = points(q, t as u32);
        assert_eq!(n, (q.pow(t as u32) - 1) / (q - 1));
        let mut seen = BTreeSet::new();
        let mut last_lead = t - 1;
        for i in 0..n {
            let v = point_vector(i, q, t);
            assert!(is_canonical(&v, q), "q={q} t={t}: point {i} is {v:?}");
            assert_eq!(point_index(&v, q), i, "q={q} t={t}: {v:?}");
            let lead = v.iter().position(|&c| c != 0).unwrap();
            assert!(lead <= last_lead, "q={q} t={t}: point {i}'s leading 1 moved right");
            last_lead = lead;
            assert!(seen.insert(v));
        }
        let mut unit = vec![0; t];
        unit[t - 1] = 1;
        assert_eq!(point_vector(0, q, t), unit);
        unit.rotate_left(t - 1);
        assert_eq!(point_vector(n - 1, q, t).first(), Some(&1));
        assert_eq!(point_index(&unit, q), points(q, t as u32 - 1), "q={q} t={t}: (1, 0, …, 0)");
    }
}

#[test]
fn each_hyperplane_is_numbered_one_to_one() {
    for &(q, t) in SPACES.iter().filter(|(_, t)| *t >= 2) {
        let (n, s) = (points(q, t as u32), points(q, t as u32 - 1));
        for i in 0..n {
            let v = point_vector(i, q, t);
            let orthogonal: BTreeSet<Vec<u64>> =
                (0..n).map(|j| point_vector(j, q, t)).filter(|u| dot(u, &v, q) == 0).collect();
            assert_eq!(orthogonal.len() as u64, s, "q={q} t={t}: a hyperplane has P_(t-1) points");
            let numbered: BTreeSet<Vec<u64>> = (0..s)
                .map(|r| {
                    let u = hyperplane_point(&v, r, q);
                    assert!(is_canonical(&u, q), "q={q} t={t} v={v:?} r={r}: {u:?}");
                    assert_eq!(dot(&u, &v, q), 0, "q={q} t={t} v={v:?} r={r}: {u:?} not orthogonal");
                    u
                })
                .collect();
            assert_eq!(numbered, orthogonal, "q={q} t={t} v={v:?}: not a bijection onto the hyperplane");
        }
    }
}

#[test]
fn the_primes_are_the_primes() {
    let all = primes();
    assert_eq!((all.len(), all.first(), all.last()), (6542, Some(&2), Some(&MAX_FIELD)));
    let set: BTreeSet<u64> = all.iter().copied().collect();
    assert!((0..=MAX_FIELD + 20).all(|q| is_prime(q) == set.contains(&q) || q > MAX_FIELD));
    assert!(is_prime(65537) && !is_prime(65535));
    assert_eq!(field_candidates(1.0), &[2, 3, 5, 7][..]); // 2(e − 1) + 6 = 9.43…
    assert_eq!(field_candidates(12.0).last(), Some(&MAX_FIELD));
    // 2(e^ε − 1) + 6 reaches MAX_FIELD at ε ≈ 10.397; past it (and past ε = 700, e^ε taken at 700) every prime
    assert!(field_candidates(10.39).last() < Some(&MAX_FIELD));
    for eps in [10.4, 19.9, 20.0, 25.0, 40.0, 700.0, 750.0, f64::MAX] {
        assert_eq!(field_candidates(eps), all, "ε={eps}");
    }
}

fn params(protocol: &str, p: Value) -> Arc<dyn ProtocolParams> {
    protocols::get(protocol).unwrap().params(&p).unwrap_or_else(|e| panic!("{protocol} {p}: {e}"))
}

fn projective(p: &Arc<dyn ProtocolParams>) -> &ProjectiveParams {
    (p.as_ref() as &dyn Any).downcast_ref::<ProjectiveParams>().unwrap()
}

#[test]
fn a_values_own_set_is_its_hyperplane_in_its_block() {
    // hpg: 20 values in 2 blocks of PG(2, 3) (K = 26, s = 4); pgr: PG(2, 5) (K = 31, s = 6)
    for (protocol, p) in [
        ("hpg", json!({"epsilon": 3.0, "domain_size": 20, "q": 3, "blocks": 2})),
        ("pgr", json!({"epsilon": 2.0, "domain_size": 31, "q": 5})),
    ] {
        let p = params(protocol, p);
        let pg = projective(&p);
        let (q, t, b) = (pg.q, pg.dimension as usize, pg.block_points);
        assert_eq!(pg.order(), pg.blocks * b);
        for x in 0..pg.d {
            let v = point_vector(x % b, q, t);
            let own: BTreeSet<u64> = (0..pg.set_size).map(|r| pg.own_point(x, r)).collect();
            let want: BTreeSet<u64> =
                (0..b).filter(|&j| dot(&point_vector(j, q, t), &v, q) == 0).map(|j| x / b * b + j).collect();
            assert_eq!(own, want, "{protocol} value {x}");
        }
    }
}

/// `var` is the fixture's `want`, to the last bit; `null` there is an infinite variance (no `γ` strictly inside
/// (0, 1)).
fn assert_variance(var: f64, want: &Value, what: &str) {
    match want.as_f64() {
        Some(want) => assert_eq!(var.to_bits(), want.to_bits(), "{what}"),
        None => assert!(want.is_null() && var == f64::INFINITY, "{what}: {var}, want {want}"),
    }
}

#[test]
fn default_layouts_are_pythons() {
    let doc = fixture();
    // [epsilon, domain_size, q, variance]
    for row in doc["pgr"].as_array().unwrap() {
        let (eps, d) = (f(&row[0]), row[1].as_u64().unwrap());
        let q = best_pgr_field(eps, d);
        assert_eq!(q, row[2].as_u64(), "pgr ε={eps} d={d}");
        if let Some(q) = q {
            let var = rare_variance(eps, q, dimension(q, 1, d), 1, d);
            assert_variance(var, &row[3], &format!("pgr ε={eps} d={d} q={q}"));
        }
    }
    // [epsilon, domain_size, q, blocks, layout, variance], q and blocks as given to the search
    for row in doc["hpg"].as_array().unwrap() {
        let (eps, d) = (f(&row[0]), row[1].as_u64().unwrap());
        let layout = best_hpg_layout(eps, d, row[2].as_u64(), row[3].as_u64());
        let want = row[4].as_array().map(|l| (l[0].as_u64().unwrap(), l[1].as_u64().unwrap()));
        assert_eq!(layout, want, "hpg ε={eps} d={d} q={} blocks={}", row[2], row[3]);
        if let Some((q, h)) = layout {
            let var = rare_variance(eps, q, dimension(q, h, d), h, d);
            assert_variance(var, &row[5], &format!("hpg ε={eps} d={d} ({q}, {h})"));
        }
    }
}

#[test]
fn variances_and_hyperplane_points_are_pythons() {
    let doc = fixture();
    // [epsilon, q, t, blocks, domain_size, variance]: layouts chosen or not
    let variances = doc["variances"].as_array().unwrap();
    assert!(variances.len() > 300);
    for row in variances {
        let (eps, q, t) = (f(&row[0]), row[1].as_u64().unwrap(), row[2].as_u64().unwrap() as u32);
        let (h, d) = (row[3].as_u64().unwrap(), row[4].as_u64().unwrap());
        assert_variance(rare_variance(eps, q, t, h, d), &row[5], &format!("ε={eps} q={q} t={t} h={h} d={d}"));
    }
    // [q, t, point, r, index]: the r-th point of the hyperplane of a point, over large fields and dimensions
    let hyperplanes = doc["hyperplanes"].as_array().unwrap();
    assert!(hyperplanes.len() >= 100);
    for row in hyperplanes {
        let [q, t, point, r, index] = [0, 1, 2, 3, 4].map(|i| row[i].as_u64().unwrap());
        let v = point_vector(point, q, t as usize);
        let u = hyperplane_point(&v, r, q);
        assert_eq!(dot(&u, &v, q), 0, "q={q} t={t} point={point} r={r}");
        assert_eq!(point_index(&u, q), index, "q={q} t={t} point={point} r={r}");
    }
}

#[test]
fn parameters_are_resolved_and_refused_as_python_does() {
    let doc = fixture();
    for item in doc["params"].as_array().unwrap() {
        let (protocol, given) = (item["protocol"].as_str().unwrap(), &item["given"]);
        let got = protocols::get(protocol).unwrap().params(given);
        match (&got, item.get("error")) {
            (Ok(p), None) => {
                assert!(
                    same_json(&p.canonical_dict(), &item["resolved"]),
                    "{protocol} {given}: {}",
                    p.canonical_dict()
                );
                assert_eq!(p.fingerprint(), item["fingerprint"].as_str().unwrap(), "{protocol} {given}");
                let pg = projective(p);
                let sizes = [u64::from(pg.dimension), pg.order(), pg.set_size];
                let want = ["t", "order", "set_size"].map(|k| item[k].as_u64().unwrap());
                assert_eq!(sizes, want, "{protocol} {given}: t, K, s");
                assert_eq!(pg.gamma.to_bits(), f(&item["gamma"]).to_bits(), "{protocol} {given}: γ");
                assert!(close_ulps(p.privacy_cost().epsilon, f(&item["cost"]), 4.0), "{protocol} {given}: cost");
            }
            (Err(Error::Refusal(r)), Some(want)) => {
                let fields = Value::Object(r.fields.clone());
                assert_eq!(r.kind.as_str(), want["type"].as_str().unwrap(), "{protocol} {given}");
                assert_eq!(r.code.as_str(), want["code"].as_str().unwrap(), "{protocol} {given}");
                assert!(same_json(&fields, &want["fields"]), "{protocol} {given}: {fields}, want {}", want["fields"]);
            }
            _ => panic!("{protocol} {given}: {got:?}, want {item}"),
        }
    }
}

/// The refusal Python gives `params` of `protocol`, from the fixture (which must hold it).
fn pythons_refusal<'a>(doc: &'a Value, protocol: &str, params: &Value) -> &'a Value {
    let item =
        doc["params"].as_array().unwrap().iter().find(|i| i["protocol"] == protocol && same_json(&i["given"], params));
    let item =
        item.unwrap_or_else(|| panic!("{protocol} {params}: not in the fixture, rerun conformance/layout_vectors.py"));
    item.get("error").unwrap_or_else(|| panic!("{protocol} {params}: accepted by Python"))
}

#[test]
fn no_feasible_layout_is_refused_with_the_least_excess_or_two_blocks() {
    let doc = fixture();
    let cells = |d| least_excess(d, &pgr_layouts(1.0));
    assert_eq!(cells(1 << 28), Some(LeastExcess::AggregateCells(305_175_781))); // P_13 = (5^13 − 1)/4 over F_5
    assert_eq!(least_excess(1 << 26, &pgr_layouts(8.0)), Some(LeastExcess::DecodeWork(7_069_666_240)));
    assert!(hpg_layouts(1.0, 5, Some(5), None).is_empty()); // F_5's line holds 6 points
    assert_eq!(least_excess(5, &[]), None);
    // (protocol, params, code, limit or rule): the cases of each kind, checked against Python's answer
    let cases = [
        ("pgr", json!({"epsilon": 1.0, "domain_size": 1u64 << 28}), "param_limit", "aggregate_cells"),
        ("hpg", json!({"epsilon": 1.0, "domain_size": 1u64 << 29}), "param_limit", "aggregate_cells"),
        ("pgr", json!({"epsilon": 8.0, "domain_size": 1u64 << 26}), "param_limit", "decode_work"),
        ("hpg", json!({"epsilon": 1.0, "domain_size": 5, "q": 5}), "param_relation", "two_blocks"),
        ("hpg", json!({"epsilon": 1.0, "domain_size": 100, "q": 101}), "param_relation", "two_blocks"),
    ];
    for (protocol, given, code, id) in cases {
        let want = pythons_refusal(&doc, protocol, &given);
        assert_eq!(
            (want["code"].as_str(), want["fields"]["limit"].as_str().or(want["fields"]["rule"].as_str())),
            (Some(code), Some(id)),
            "{protocol} {given}: Python's refusal changed"
        );
        let Err(Error::Refusal(r)) = protocols::get(protocol).unwrap().params(&given) else {
            panic!("{protocol} {given}: not refused")
        };
        assert_eq!((r.kind.as_str(), r.code.as_str()), (want["type"].as_str().unwrap(), code), "{protocol} {given}");
        assert!(same_json(&Value::Object(r.fields.clone()), &want["fields"]), "{protocol} {given}: {:?}", r.fields);
        let message = r.to_string();
        let words = if id == "two_blocks" { "two blocks" } else { id.split('_').next().unwrap() };
        assert!(message.contains(words), "{protocol} {given}: {message}");
    }
}

/// Whether `(q, blocks)` is within the aggregate's cells and the decoder's steps over `d` values.
fn feasible(q: u64, blocks: u64, d: u64) -> bool {
    let t = dimension(q, blocks, d);
    blocks.saturating_mul(points(q, t)) <= 1 << 28 && decode_work(q, t, blocks) <= MAX_DECODE_WORK
}

/// The variances of the feasible layouts of `layouts` over `d` values at `eps`, in candidate order.
fn variances(eps: f64, d: u64, layouts: &[(u64, u64)]) -> Vec<((u64, u64), f64)> {
    layouts
        .iter()
        .filter(|&&(q, h)| feasible(q, h, d))
        .map(|&(q, h)| ((q, h), rare_variance(eps, q, dimension(q, h, d), h, d)))
        .collect()
}

#[test]
fn at_an_extreme_epsilon_the_default_is_the_first_feasible_layout() {
    let doc = fixture();
    // the grid holds the extreme ε, for pgr and for hpg
    for eps in [1e-300, 1e-30, 1e-15, 701.0, 1e300] {
        for key in ["pgr", "hpg"] {
            let n = doc[key].as_array().unwrap().iter().filter(|row| f(&row[0]) == eps).count();
            assert!(n >= 14, "{key} ε={eps}: {n} entries in the fixture's grid, rerun conformance/layout_vectors.py");
        }
    }
    // where no feasible layout has a finite variance, the default is the first feasible one …
    for eps in [1e-300, 1e-30, 701.0, 1e300] {
        for d in [4, 20, 1000, 1 << 20] {
            let layouts = pgr_layouts(eps);
            let all = variances(eps, d, &layouts);
            assert!(all.iter().all(|(_, v)| v.is_infinite()), "pgr ε={eps} d={d}");
            assert_eq!(best_pgr_field(eps, d), Some(all[0].0 .0), "pgr ε={eps} d={d}");
            let layouts = hpg_layouts(eps, d, None, None);
            let all = variances(eps, d, &layouts);
            assert!(all.iter().all(|(_, v)| v.is_infinite()), "hpg ε={eps} d={d}");
            assert_eq!(best_hpg_layout(eps, d, None, None), Some(all[0].0), "hpg ε={eps} d={d}");
        }
    }
    // … and where only some have one (ε = 1e-15), one of those: hpg over 1000 values skips an infinite first
    let all = variances(1e-15, 1000, &hpg_layouts(1e-15, 1000, None, None));
    let chosen = best_hpg_layout(1e-15, 1000, None, None).unwrap();
    assert!(all[0].1.is_infinite() && all[0].0 != chosen, "{all:?}");
    assert!(all.iter().find(|(l, _)| *l == chosen).unwrap().1.is_finite());
    assert_eq!(best_pgr_field(1e-15, 1000), Some(3));
}

#[test]
fn an_epsilon_no_layout_can_realize_is_refused_for_what_it_is() {
    let doc = fixture();
    // (protocol, params, code, rule or limit): the params refuse ε itself, or, with no feasible layout at all, the
    // least excess; checked against Python's answer
    let cases = [
        ("pgr", json!({"epsilon": 701.0, "domain_size": 1000}), "param_relation", "epsilon_too_large"),
        ("pgr", json!({"epsilon": 750.0, "domain_size": 13}), "param_relation", "epsilon_too_large"),
        ("pgr", json!({"epsilon": 1e300, "domain_size": 1000}), "param_relation", "epsilon_too_large"),
        ("pgr", json!({"epsilon": 1e-300, "domain_size": 1000}), "param_relation", "epsilon_too_small"),
        ("pgr", json!({"epsilon": 1e-30, "domain_size": 1000}), "param_relation", "epsilon_too_small"),
        ("hpg", json!({"epsilon": 701.0, "domain_size": 20}), "param_relation", "epsilon_too_large"),
        ("hpg", json!({"epsilon": 1e300, "domain_size": 1000}), "param_relation", "epsilon_too_large"),
        ("hpg", json!({"epsilon": 1e-300, "domain_size": 20}), "param_relation", "epsilon_too_small"),
        ("hpg", json!({"epsilon": 1e-30, "domain_size": 1000, "q": 7}), "param_relation", "epsilon_too_small"),
        ("hpg", json!({"epsilon": 701.0, "domain_size": 1000, "blocks": 4}), "param_relation", "epsilon_too_large"),
        ("pgr", json!({"epsilon": 701.0, "domain_size": 1u64 << 32}), "param_limit", "aggregate_cells"),
        ("pgr", json!({"epsilon": 1e-300, "domain_size": 1u64 << 32}), "param_limit", "aggregate_cells"),
        ("hpg", json!({"epsilon": 701.0, "domain_size": 1u64 << 32}), "param_limit", "aggregate_cells"),
    ];
    for (protocol, given, code, id) in cases {
        refused_for_its_epsilon_or_excess(&doc, protocol, &given, code, id);
    }
}

/// `protocol`'s params refuse `given` as Python does: `code`, with `id` as its rule or limit; a relation refused
/// for ε itself says so, a limit is exceeded.
fn refused_for_its_epsilon_or_excess(doc: &Value, protocol: &str, given: &Value, code: &str, id: &str) {
    let want = pythons_refusal(doc, protocol, given);
    assert_eq!(
        (want["code"].as_str(), want["fields"]["rule"].as_str().or(want["fields"]["limit"].as_str())),
        (Some(code), Some(id)),
        "{protocol} {given}: Python's refusal changed"
    );
    let Err(Error::Refusal(r)) = protocols::get(protocol).unwrap().params(given) else {
        panic!("{protocol} {given}: not refused")
    };
    assert_eq!((r.kind.as_str(), r.code.as_str()), (want["type"].as_str().unwrap(), code), "{protocol} {given}");
    assert!(same_json(&Value::Object(r.fields.clone()), &want["fields"]), "{protocol} {given}: {:?}", r.fields);
    if code == "param_relation" {
        assert!(same_json(&want["fields"]["params"], &json!(["epsilon", "domain_size", "q"])), "{protocol} {given}");
        let message = r.to_string();
        let words = if id == "epsilon_too_large" { "so large" } else { "so small" };
        assert!(message.contains(words), "{protocol} {given}: {message}");
    } else {
        assert!(want["fields"]["got"].as_u64() > want["fields"]["max"].as_u64(), "{protocol} {given}: {want}");
    }
}
