// The API reference (/docs): Swagger UI, served from this origin, over the platform's own OpenAPI document.
window.ui = window.SwaggerUIBundle({
  url: '/v1/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  displayOperationId: true,
  filter: true,
  docExpansion: 'list',
  defaultModelsExpandDepth: 0,
  tryItOutEnabled: false,
  validatorUrl: null,
});
