// cli_train.cpp: being written (session 2); see the matching header.
