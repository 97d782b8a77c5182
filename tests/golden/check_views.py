#!/usr/bin/python3
"""check_views.py TOPOLOGY.yaml LAB.json DOT.json PREFIX vm|netns

Checks topogen's two views of a topology against the topology file as PyYAML
reads it (not topogen's parser, topo.c):
  LAB.json   topogen's lab.json (--json): its keys exactly those README
             documents, and every node's role, rank, kind, names, parent,
             children, management and data-plane addresses, ports and bridges,
             and every link's ends, as the file declares them;
  DOT.json   topology.dot (--dot) as graphviz parsed and laid it out
             (dot -Tjson): a node per declared node and the management
             network, shapes by role, namespace nodes dashed, each label's
             lines as rendered, an edge per link from parent to child labelled
             with the parent's address over the child's, and the graph's title
             naming the topology and its file.
Prints one line per difference; exit status 1 when there is one.
"""
import ipaddress
import json
import sys

import yaml

# The documented keys (README, "Lab state for people and scripts"): a change
# here is a change of the documented format.
TOP_KEYS = ["version", "lab", "topology", "switches", "management", "nodes", "links"]
TOPOLOGY_KEYS = ["name", "file", "root", "nodes", "hosts", "links"]
MGMT_KEYS = ["subnet", "bridge", "network"]
NODE_KEYS = ["name", "role", "root", "rank", "kind", "domain", "netns", "parent", "children",
             "vcpus", "memory_mib", "management", "addresses", "interfaces"]
ADDR_KEYS = ["interface", "address", "prefix", "subnet"]
IF_KEYS = ["name", "type", "mtu", "peer", "link", "bridge", "ports"]
LINK_KEYS = ["index", "subnet", "mtu", "ends"]
END_KEYS = ["node", "interface", "address", "prefix"]

problems = []


def bad(msg):
    problems.append(msg)


def keys(what, obj, want):
    if not isinstance(obj, dict) or list(obj) != want:
        bad(f"{what}: keys {list(obj) if isinstance(obj, dict) else type(obj).__name__}, want {want}")


def main():
    topo_path, lab_path, dot_path, prefix, mode = sys.argv[1:6]
    topo = yaml.safe_load(open(topo_path))
    lab = json.load(open(lab_path))
    netns = mode == "netns"
    nodes = topo["nodes"]
    byname = {n["name"]: n for n in nodes}
    links = [list(link.items()) for link in topo["links"]]  # [(node, "addr/len"), (node, "addr/len")]
    mgmt_len = ipaddress.ip_network(topo["management"]).prefixlen

    # the tree, from the root down (breadth first over the links)
    parent, order = {topo["root"]: None}, [topo["root"]]
    for name in order:
        for (a, _), (b, _) in links:
            for x, y in ((a, b), (b, a)):
                if x == name and y not in parent:
                    parent[y] = name
                    order.append(y)
    children = {n["name"]: [] for n in nodes}
    for n in nodes:  # in the order of the file, as topogen lists them
        if parent.get(n["name"]):
            children[parent[n["name"]]].append(n["name"])

    # ---- lab.json
    keys("lab.json", lab, TOP_KEYS)
    keys("lab.json .topology", lab.get("topology"), TOPOLOGY_KEYS)
    keys("lab.json .management", lab.get("management"), MGMT_KEYS)
    t = lab.get("topology", {})
    for k, want in (("name", topo["name"]), ("file", topo_path), ("root", topo["root"]), ("nodes", len(nodes)),
                    ("hosts", sum(n["role"] == "host" for n in nodes)), ("links", len(links))):
        if t.get(k) != want:
            bad(f"lab.json .topology.{k} is {t.get(k)!r}, want {want!r}")
    for k, want in (("version", 1), ("lab", prefix), ("switches", mode)):
        if lab.get(k) != want:
            bad(f"lab.json .{k} is {lab.get(k)!r}, want {want!r}")
    if lab.get("management", {}).get("subnet") != topo["management"]:
        bad(f"lab.json .management.subnet is {lab.get('management', {}).get('subnet')!r}, want {topo['management']!r}")
    if lab.get("management", {}).get("network") != f"{prefix}-mgmt":
        bad(f"lab.json .management.network is not {prefix}-mgmt")
    got_names = [n.get("name") for n in lab.get("nodes", [])]
    if got_names != [n["name"] for n in nodes]:
        bad(f"lab.json nodes {got_names}, want {[n['name'] for n in nodes]}")
    for j in lab.get("nodes", []):
        name = j.get("name")
        n = byname.get(name)
        if n is None:
            continue
        w = f"lab.json node {name}"
        keys(w, j, NODE_KEYS)
        kind = "netns" if netns and n["role"] != "host" else "vm"
        want = {"role": n["role"], "root": name == topo["root"], "rank": n.get("rank"), "kind": kind,
                "domain": f"{prefix}-{name}" if kind == "vm" else None,
                "netns": f"{prefix}-{name}" if kind == "netns" else None,
                "parent": parent.get(name), "children": children[name]}
        for k, v in want.items():
            if j.get(k) != v:
                bad(f"{w}: {k} is {j.get(k)!r}, want {v!r}")
        m = j.get("management", {})
        keys(f"{w} management", m, ADDR_KEYS)
        if (m.get("interface"), m.get("address"), m.get("prefix")) != ("mgmt0", n["mgmt"], mgmt_len):
            bad(f"{w}: management {m}, want mgmt0 {n['mgmt']}/{mgmt_len}")
        # data plane: every address the file gives the node on a link, once (a bridge's once)
        want_addrs = sorted(set(addr for link in links for node, addr in link if node == name))
        got_addrs = []
        for a in j.get("addresses", []):
            keys(f"{w} address", a, ADDR_KEYS)
            got_addrs.append(f"{a.get('address')}/{a.get('prefix')}")
            net = ipaddress.ip_interface(got_addrs[-1]).network
            if a.get("subnet") != str(net):
                bad(f"{w}: address {got_addrs[-1]} has subnet {a.get('subnet')!r}, want {net}")
        if sorted(got_addrs) != want_addrs:
            bad(f"{w}: data addresses {sorted(got_addrs)}, want {want_addrs}")
        # interfaces: mgmt0, a port "to-PEER" per link, a bridge over the ports that share an address
        ifs = j.get("interfaces", [])
        for i in ifs:
            keys(f"{w} interface {i.get('name')}", i, IF_KEYS)
        peers = [(b if a == name else a, xa if a == name else xb, li)
                 for li, ((a, xa), (b, xb)) in enumerate(links) if name in (a, b)]
        ports = {i["name"]: i for i in ifs if i.get("type") == "port"}
        if [i.get("name") for i in ifs if i.get("type") == "management"] != ["mgmt0"]:
            bad(f"{w}: management interfaces {[i.get('name') for i in ifs if i.get('type') == 'management']}, want mgmt0")
        if sorted(ports) != sorted(f"to-{p}" for p, _, _ in peers):
            bad(f"{w}: ports {sorted(ports)}, want {sorted(f'to-{p}' for p, _, _ in peers)}")
        shared = {}
        for p, addr, li in peers:
            shared.setdefault(addr, []).append(f"to-{p}")
            i = ports.get(f"to-{p}", {})
            if i.get("peer") != p or i.get("link") != li:
                bad(f"{w}: port to-{p}: peer {i.get('peer')!r} link {i.get('link')!r}, want {p!r} {li}")
            mtu = 9000 if n["role"] == "switch" and byname[p]["role"] == "switch" else 1500
            if i.get("mtu") != mtu:
                bad(f"{w}: port to-{p}: mtu {i.get('mtu')}, want {mtu}")
        bridges = {i.get("name"): i.get("ports") for i in ifs if i.get("type") == "bridge"}
        want_bridged = sorted(sorted(v) for v in shared.values() if len(v) > 1)
        if sorted(sorted(v) for v in bridges.values()) != want_bridged:
            bad(f"{w}: bridges {bridges}, want bridges over {want_bridged}")
        for br, members in bridges.items():
            for p in members or []:
                if ports.get(p, {}).get("bridge") != br:
                    bad(f"{w}: port {p} does not name its bridge {br}")
    if len(lab.get("links", [])) != len(links):
        bad(f"lab.json has {len(lab.get('links', []))} links, want {len(links)}")
    for li, (link, j) in enumerate(zip(links, lab.get("links", []))):
        keys(f"lab.json link {li}", j, LINK_KEYS)
        got = []
        for e in j.get("ends", []):
            keys(f"lab.json link {li} end", e, END_KEYS)
            got.append((e.get("node"), f"{e.get('address')}/{e.get('prefix')}", e.get("interface")))
        want = [(a, x, f"to-{b}") for (a, x), (b, _) in (link, link[::-1])]
        if j.get("index") != li or got != want:
            bad(f"lab.json link {li}: index {j.get('index')} ends {got}, want {want}")

    # ---- topology.dot, as graphviz read and drew it
    dot = json.load(open(dot_path))

    def texts(obj):
        return [d["text"] for d in obj.get("_ldraw_", []) if d.get("op") == "T"]

    title = texts(dot)
    want = f"inclab topology {topo['name']} ({topo_path})"
    if not title or title[0] != want:
        bad(f"topology.dot: title {title[:1]}, want [{want!r}]")
    objs = {o["_gvid"]: o for o in dot.get("objects", []) if "nodes" not in o}  # nodes, not subgraphs
    names = sorted(o["name"] for o in objs.values())
    if names != sorted([n["name"] for n in nodes] + ["_management"]):
        bad(f"topology.dot: nodes {names}, want the topology's and _management")
    shape = {"controller": "hexagon", "switch": "box", "host": "ellipse"}
    for o in objs.values():
        n = byname.get(o["name"])
        if n is None:
            if "management network " + topo["management"] not in texts(o):
                bad(f"topology.dot: the management note says {texts(o)}")
            continue
        w = f"topology.dot node {n['name']}"
        if o.get("shape") != shape[n["role"]]:
            bad(f"{w}: shape {o.get('shape')}, want {shape[n['role']]}")
        ns = netns and n["role"] != "host"
        if ("dashed" in o.get("style", "")) != ns:
            bad(f"{w}: style {o.get('style')!r}, {'' if ns else 'not '}dashed wanted")
        lines = texts(o)
        if not lines or lines[0] != n["name"] or lines[-1] != f"mgmt {n['mgmt']}":
            bad(f"{w}: label lines {lines}")
        if n["role"] == "host" and f"host, rank {n['rank']}" not in lines:
            bad(f"{w}: label lines {lines} lack 'host, rank {n['rank']}'")
    edges = {}
    for e in dot.get("edges", []):
        if e.get("style") in ("invis", "dashed"):
            continue
        key = (objs[e["tail"]]["name"], objs[e["head"]]["name"])
        if key in edges:
            bad(f"topology.dot: two edges {key}")
        edges[key] = texts(e)
    want_edges = {}
    for (a, x), (b, y) in links:
        if parent.get(a) == b:
            (a, x), (b, y) = (b, y), (a, x)
        want_edges[(a, b)] = [x, y]
    if edges != want_edges:
        bad(f"topology.dot: edges (parent, child): labels {edges}, want {want_edges}")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
