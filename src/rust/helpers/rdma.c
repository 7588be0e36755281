// SPDX-License-Identifier: GPL-2.0

#include <rdma/ib_verbs.h>

__rust_helper int rust_helper_ibdev_to_node(struct ib_device *ibdev)
{
	return ibdev_to_node(ibdev);
}

__rust_helper bool rust_helper_ib_uses_virt_dma(struct ib_device *dev)
{
	return ib_uses_virt_dma(dev);
}

__rust_helper u64 rust_helper_ib_dma_map_page(struct ib_device *dev,
					      struct page *page,
					      unsigned long offset, size_t size,
					      enum dma_data_direction direction)
{
	return ib_dma_map_page(dev, page, offset, size, direction);
}

__rust_helper int rust_helper_ib_dma_mapping_error(struct ib_device *dev,
						   u64 dma_addr)
{
	return ib_dma_mapping_error(dev, dma_addr);
}

__rust_helper void rust_helper_ib_dma_unmap_page(struct ib_device *dev,
						 u64 addr, size_t size,
						 enum dma_data_direction direction)
{
	ib_dma_unmap_page(dev, addr, size, direction);
}

__rust_helper u64 rust_helper_ib_dma_map_single(struct ib_device *dev,
						void *cpu_addr, size_t size,
						enum dma_data_direction direction)
{
	return ib_dma_map_single(dev, cpu_addr, size, direction);
}

__rust_helper void rust_helper_ib_dma_unmap_single(struct ib_device *dev,
						   u64 addr, size_t size,
						   enum dma_data_direction direction)
{
	ib_dma_unmap_single(dev, addr, size, direction);
}
