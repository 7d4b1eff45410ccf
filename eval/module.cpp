// Placeholder translation unit; replaced as the folder gains sources.
namespace plumb::eval { int module_anchor = 0; }
