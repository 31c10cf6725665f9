/*
 * ctl_cluster.h -- `wm-ctl cluster ...` (ctl_cluster.c has the why).
 */
#ifndef WM_CTL_CLUSTER_H
#define WM_CTL_CLUSTER_H

/* argv[0] is the subcommand ("status"); the exit status of the command. */
int ctl_cluster(int argc, char **argv);
/* `wm-ctl txn resolve TXN commit|abort ...`: argv[0] is "resolve". */
int ctl_txn(int argc, char **argv);
/* `wm-ctl checks run ...`: argv[0] is "run". */
int ctl_checks(int argc, char **argv);

#endif
