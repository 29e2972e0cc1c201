/* placeholder */ typedef int kdp_placeholder_;
