// SPDX-License-Identifier: GPL-2.0

#include <linux/llist.h>

__rust_helper bool rust_helper_llist_add(struct llist_node *new,
					 struct llist_head *head)
{
	return llist_add(new, head);
}

__rust_helper struct llist_node *rust_helper_llist_del_all(struct llist_head *head)
{
	return llist_del_all(head);
}
