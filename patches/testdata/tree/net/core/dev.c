// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * NET3	Protocol independent device support routines.
 */
#include <linux/netdevice.h>

static int napi_weight = 64;

int napi_poll(struct napi_struct *n, int budget)
{
	int work = 0;

	if (!n->poll)
		return 0;
	work = n->poll(n, budget);
	if (work > budget)
		work = budget;
	return work;
}

void napi_schedule(struct napi_struct *n)
{
	if (test_and_set_bit(NAPI_STATE_SCHED, &n->state))
		return;
	list_add_tail(&n->poll_list, this_cpu_ptr(&softnet_data.poll_list));
	raise_softirq(NET_RX_SOFTIRQ);
}

static void net_rx_action(struct softirq_action *h)
{
	struct softnet_data *sd = this_cpu_ptr(&softnet_data);
	int budget = netdev_budget;

	while (!list_empty(&sd->poll_list)) {
		struct napi_struct *n;

		n = list_first_entry(&sd->poll_list, struct napi_struct, poll_list);
		budget -= napi_poll(n, napi_weight);
		if (budget <= 0)
			break;
	}
}
