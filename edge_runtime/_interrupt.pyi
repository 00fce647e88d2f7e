"""The compiled abort callback (edge_runtime/_interrupt.c)."""

CALLBACK: int  # the address of `bool step_cut_requested(void *flags)`, llama.cpp's ggml_abort_callback
