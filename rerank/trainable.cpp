// trainable.cpp: being written (session 2); see the matching header.
