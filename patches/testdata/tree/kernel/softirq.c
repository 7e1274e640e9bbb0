// SPDX-License-Identifier: GPL-2.0-only
#include <linux/interrupt.h>

static void wakeup_softirqd(void)
{
	struct task_struct *tsk = __this_cpu_read(ksoftirqd);

	if (tsk)
		wake_up_process(tsk);
}

void raise_softirq(unsigned int nr)
{
	or_softirq_pending(1UL << nr);
	if (!in_interrupt())
		wakeup_softirqd();
}
