/*
 * netns.h -- network partitions for tests (issue 14, DESIGN.md 9 "Testing a
 * cluster"): the test moves itself into a network namespace of its own and
 * cuts and heals TCP traffic with iptables rules inside it.
 *
 * How: netns_enter() calls unshare(CLONE_NEWNET) in the test's worker
 * process (Criterion forks one per test), so the worker and every process
 * it starts afterwards (routers, shards, proxies) live in a fresh network
 * namespace whose only interface is its own loopback, which netns_enter
 * brings up.  That is what `unshare --net` does, without re-executing the
 * test binary.  Not root: it falls back to a user namespace owning the
 * network namespace (unshare --net --map-root-user), which gives iptables
 * the capability it needs inside, and nothing outside -- but the kernel
 * allows that only to a single-threaded process, and Criterion's worker
 * has threads (EINVAL, measured).  So a non-root run wraps the binary:
 * `unshare --user --map-root-user build/san/wm-tests --filter=<netns suite>`
 * (then the plain CLONE_NEWNET succeeds inside).  make test and CI run as
 * root, where the first call succeeds.
 *
 * Safety: no veth pair, no route, no address other than loopback ever
 * exists in the namespace, so no packet can leave the machine; every rule
 * is refused unless the caller is in a namespace that netns_enter made
 * (the host's tables are never touched).  Rules only match TCP ports and
 * loopback addresses.
 *
 * Cutting: rules go in the INPUT chain, which every packet on loopback
 * crosses.  DROP on the destination port makes the connections TO that port
 * silent both ways (the peer's packets never arrive, so nothing is
 * acknowledged): a connect times out and sent data stalls, then flows again
 * after heal (TCP retransmits), as across a real partition.  REJECT answers
 * with a TCP reset: a connect fails at once with ECONNREFUSED.
 */
#ifndef WM_TEST_NETNS_H
#define WM_TEST_NETNS_H

#include <stddef.h>

enum netns_how { NETNS_DROP = 0, NETNS_REJECT };

/*
 * Move this process into a new network namespace with lo up.  0, or -1
 * with the exact reason in why (which call failed and errno; e.g. EPERM
 * when neither CAP_SYS_ADMIN nor user namespaces are allowed).  Calling it
 * twice is an error (-1): one namespace per test.
 */
int netns_enter(char *why, size_t whylen);

/* 1 once netns_enter succeeded in this process. */
int netns_inside(void);

/*
 * Cut TCP traffic to `port` (on any 127.0.0.0/8 address), from any source,
 * or only from `src` when not NULL (a 127.x.y.z address the sender bound).
 * Heal removes exactly the rule that cut added.  0, or -1 with why (not
 * inside a namespace of ours, a bad argument, iptables missing or failing:
 * its exit status and output).
 */
int netns_cut(int port, const char *src, enum netns_how how, char *why, size_t whylen);
int netns_heal(int port, const char *src, enum netns_how how, char *why, size_t whylen);

/* Remove every rule (flush INPUT in our namespace).  0 or -1 with why. */
int netns_heal_all(char *why, size_t whylen);

#endif
