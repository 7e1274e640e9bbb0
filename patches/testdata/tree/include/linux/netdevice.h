#ifndef _LINUX_NETDEVICE_H
#define _LINUX_NETDEVICE_H

struct napi_struct {
	struct list_head poll_list;
	unsigned long state;
	int weight;
	int (*poll)(struct napi_struct *, int);
};

int napi_poll(struct napi_struct *n, int budget);
void napi_schedule(struct napi_struct *n);

#endif
