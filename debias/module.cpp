// Placeholder translation unit; replaced as the folder gains sources.
namespace plumb::debias { int module_anchor = 0; }
